package contract_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/api/contract"
)

func checker(t *testing.T) *contract.Checker {
	t.Helper()
	c, err := contract.New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOperationsAndDocumented(t *testing.T) {
	c := checker(t)
	byKey := map[string]contract.Operation{}
	for _, o := range c.Operations() {
		byKey[o.Method+" "+o.Path] = o
	}
	list, ok := byKey["GET /v2/jobs"]
	if !ok || list.ID != "listJobs" || list.Public || !slices.Equal(list.Scopes, []string{"jobs:read", "jobs:write", "read", "write"}) {
		t.Fatalf("GET /v2/jobs: %+v", list)
	}
	if blog := byKey["GET /v2/blog"]; !blog.Public || len(blog.Scopes) != 0 {
		t.Fatalf("GET /v2/blog: %+v", blog)
	}
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v2/jobs", true},
		{"POST", "/v2/jobs", true},
		{"PUT", "/v2/jobs", false},
		{"HEAD", "/v2/jobs", false},
		{"GET", "/v2/jobs/", false},
		{"GET", "/v2/nope", false},
		{"GET", "/internal/cities/resolve", false},
	} {
		if got := c.Documented(tc.method, tc.path); got != tc.want {
			t.Errorf("Documented(%s %s) = %v", tc.method, tc.path, got)
		}
	}
}

// The checker really fails on drift: a wrong field type, a missing required
// field, an undocumented status, a 422 whose details are not an array.
func TestCheckFindsDrift(t *testing.T) {
	c := checker(t)
	json := http.Header{"Content-Type": []string{"application/json"}}
	cities := httptest.NewRequest(http.MethodGet, "/v2/cities?search=ber", nil)
	ok := `{"success":true,"status":200,"data":[{"id_city":"1","city_name":"Berlin","city_slug":"berlin","latitude":"52.520008","longitude":"13.404954"}]}`
	if err := c.Check(cities, 200, json, []byte(ok)); err != nil {
		t.Fatalf("a correct answer fails: %v", err)
	}
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"numeric id_city":    {200, strings.Replace(ok, `"id_city":"1"`, `"id_city":1`, 1)},
		"missing city_slug":  {200, strings.Replace(ok, `"city_slug":"berlin",`, ``, 1)},
		"undocumented field": {200, strings.Replace(ok, `"city_slug"`, `"extra":1,"city_slug"`, 1)},
		"undocumented 418":   {418, `{"success":false,"status":418,"error":{"code":"bad_request","message":"x"}}`},
		"details not array":  {422, `{"success":false,"status":422,"error":{"code":"validation_error","message":"x","details":"q"}}`},
		"unknown error code": {401, `{"success":false,"status":401,"error":{"code":"nope","message":"x"}}`},
	} {
		if err := c.Check(cities, tc.status, json, []byte(tc.body)); err == nil {
			t.Errorf("%s: accepted %s", name, tc.body)
		}
	}
}

func TestUndocumentedAndCheckServed(t *testing.T) {
	c := checker(t)
	got := c.Undocumented([]string{"GET /v2/jobs", "HEAD /v2/jobs", "POST /v2/jobs/unpublish", "GET /livez",
		"GET /internal/spaces/:id", "DELETE /v2/jobs", "GET /v2/jobs/:id"})
	if !slices.Equal(got, []string{"DELETE /v2/jobs", "GET /v2/jobs/:id"}) {
		t.Fatalf("Undocumented: %v", got)
	}
	json := http.Header{"Content-Type": []string{"application/json"}}
	blog := httptest.NewRequest(http.MethodGet, "/v2/blog", nil)
	if err := c.CheckServed(blog, 401, json, []byte(`{"success":false,"status":401,"error":{"code":"unauthorized","message":"no identity"}}`)); err != nil {
		t.Fatalf("a backend's identity 401 is checked: %v", err)
	}
	internal := httptest.NewRequest(http.MethodGet, "/internal/catalog", nil)
	if err := c.CheckServed(internal, 200, json, []byte(`{"anything":1}`)); err != nil {
		t.Fatalf("an internal route is checked: %v", err)
	}
	if err := c.CheckServed(blog, 200, json, []byte(`{"success":true,"status":200,"data":{"posts":"none"}}`)); err == nil {
		t.Fatal("a wrong blog answer passes CheckServed")
	}
}
