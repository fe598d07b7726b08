package contract_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/coworkjobs/coworkjobs/api"
	"github.com/coworkjobs/coworkjobs/api/contract"
)

// document is the served OpenAPI document, parsed.
func document(t *testing.T) libopenapi.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// v3Model is the document's OpenAPI 3 model.
func v3Model(t *testing.T) *libopenapi.DocumentModel[v3.Document] {
	t.Helper()
	model, err := document(t).BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// requestValidator validates requests and answers against the document.
func requestValidator(t *testing.T) validator.Validator {
	t.Helper()
	v, errs := validator.NewValidator(document(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return v
}

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
	if err := c.CheckRoutes([]string{"GET /v2/jobs", "GET /livez"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckRoutes([]string{"GET /livez"}); err == nil {
		t.Fatal("CheckRoutes passes without a /v2 route")
	}
	if err := c.CheckRoutes([]string{"GET /v2/jobs", "DELETE /v2/jobs"}); err == nil || !strings.Contains(err.Error(), "DELETE /v2/jobs") {
		t.Fatalf("CheckRoutes on an undocumented route: %v", err)
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

// Every JSON response example of the document is a valid answer of its
// operation: the examples a reader copies tell the truth too.
func TestResponseExamplesMatchTheDocument(t *testing.T) {
	model := v3Model(t)
	c := checker(t)
	header := http.Header{"Content-Type": []string{"application/json"}}
	checked := 0
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			for code, resp := range op.Responses.Codes.FromOldest() {
				if resp.Content == nil {
					continue // 304: no body
				}
				mt, ok := resp.Content.Get("application/json")
				if !ok {
					continue
				}
				examples := map[string]*yaml.Node{"example": mt.Example}
				if mt.Examples != nil {
					for name, ex := range mt.Examples.FromOldest() {
						examples[name] = ex.Value
					}
				}
				for name, node := range examples {
					if node == nil {
						continue
					}
					var v any
					if err := node.Decode(&v); err != nil {
						t.Fatalf("%s %s %s %s: %v", method, path, code, name, err)
					}
					body, err := json.Marshal(v)
					if err != nil {
						t.Fatalf("%s %s %s %s: %v", method, path, code, name, err)
					}
					status, _ := strconv.Atoi(code)
					req := httptest.NewRequest(strings.ToUpper(method), path, nil)
					if err := c.Check(req, status, header, body); err != nil {
						t.Errorf("example %q: %v", name, err)
					}
					checked++
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d examples checked", checked)
	}
	t.Logf("%d response examples checked", checked)
}

// The create-job body as the document types it: the city is given by id_city
// or city_name (both is fine, id_city wins), integers are JSON numbers, and
// is_remote is 0/1 or a boolean. A validating client or proxy decides with
// this schema, so it must accept exactly what the service accepts.
func TestCreateJobBodySchema(t *testing.T) {
	v := requestValidator(t)
	base := `"title":"Host","company":"Acme","description":"Run it","job_type":"fulltime","tags":"a"`
	for body, want := range map[string]bool{
		`{` + base + `,"id_city":1}`:                           true,
		`{` + base + `,"city_name":"Berlin"}`:                  true,
		`{` + base + `,"id_city":1,"city_name":"Berlin"}`:      true,
		`{` + base + `,"id_city":1,"is_remote":1,"id_plan":5}`: true,
		`{` + base + `,"id_city":1,"is_remote":true}`:          true,
		`{` + base + `}`:                                                                 false,
		`{` + base + `,"id_city":"5"}`:                                                   false,
		`{` + base + `,"city_name":"Berlin","id_plan":"5"}`:                              false,
		`{` + base + `,"city_name":"Berlin","is_remote":"0"}`:                            false,
		`{` + base + `,"city_name":"Berlin","is_remote":2}`:                              false,
		`{"title":"Host","company":"Acme","job_type":"fulltime","tags":"a","id_city":1}`: false,
	} {
		req := httptest.NewRequest(http.MethodPost, "/v2/jobs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", "svc_live_x")
		ok, errs := v.ValidateHttpRequest(req)
		if ok != want {
			msgs := []string{}
			for _, e := range errs {
				msgs = append(msgs, e.Message+": "+e.Reason)
			}
			t.Errorf("%s: valid %v, want %v %v", body, ok, want, msgs)
		}
	}
}

// currency is one rule in the document (components/schemas/CurrencyInput): a
// request may name EUR, USD or GBP in any case, as the jobs service accepts it
// (it upper-cases), and every answer carries it upper case. A validating proxy
// decides with these schemas, so "eur" must pass where a request sends it and
// fail where an answer carries it.
func TestCurrencyIsCaseInsensitiveInRequestsUpperCaseInAnswers(t *testing.T) {
	v := requestValidator(t)
	valid := func(req *http.Request) (bool, []string) {
		req.Header.Set("X-API-Key", "svc_live_x")
		ok, errs := v.ValidateHttpRequest(req)
		msgs := []string{}
		for _, e := range errs {
			msgs = append(msgs, e.Message+": "+e.Reason)
		}
		return ok, msgs
	}
	base := `{"title":"Host","company":"Acme","description":"Run it","job_type":"fulltime","tags":"a","id_city":1`
	for cur, want := range map[string]bool{
		"EUR": true, "eur": true, "Eur": true, "eUr": true, "USD": true, "usd": true, "GBP": true, "gBp": true,
		"BTC": false, "EURO": false, "EU": false, "": false, " EUR": false,
	} {
		q := httptest.NewRequest(http.MethodGet, "/v2/jobs?currency="+url.QueryEscape(cur), nil)
		if ok, msgs := valid(q); ok != want {
			t.Errorf("GET /v2/jobs?currency=%q: valid %v, want %v %v", cur, ok, want, msgs)
		}
		b := httptest.NewRequest(http.MethodPost, "/v2/jobs", strings.NewReader(base+`,"currency":"`+cur+`"}`))
		b.Header.Set("Content-Type", "application/json")
		if ok, msgs := valid(b); ok != want {
			t.Errorf("POST /v2/jobs currency %q: valid %v, want %v %v", cur, ok, want, msgs)
		}
	}

	c := checker(t)
	header := http.Header{"Content-Type": []string{"application/json"}}
	list := httptest.NewRequest(http.MethodGet, "/v2/jobs", nil)
	job := `{"id_job":1,"title":"Host","company":"Acme","job_type":"fulltime","tags":"a","is_remote":false,` +
		`"page_url":"host-1","external_url":"","apply_url":"","company_logo":"","date_added":"2026-11-01T00:00:00Z",` +
		`"expiration_date":"2026-12-01T00:00:00Z","city_name":"Berlin","city_slug":"berlin","space_name":null,` +
		`"sal_min":"0","sal_max":"0","currency":"EUR","salary_period":"year","workplace_type":"on_site","external_ref":null,` +
		`"url":"https://coworkjobs.example/jobs/host-1"}`
	answer := `{"success":true,"status":200,"data":{"jobs":[` + job + `],"total":1}}`
	if err := c.Check(list, 200, header, []byte(answer)); err != nil {
		t.Fatalf("an upper-case currency in an answer fails: %v", err)
	}
	if err := c.Check(list, 200, header, []byte(strings.Replace(answer, `"EUR"`, `"eur"`, 1))); err == nil {
		t.Fatal("a lower-case currency in an answer passes")
	}
}

// GET /v2/openapi.yaml answers YAML text: the document declares a string, so a
// proxy that validates the answer (Prism) takes the served bytes.
func TestOpenAPIYAMLAnswerIsText(t *testing.T) {
	model := v3Model(t)
	op := model.Model.Paths.PathItems.GetOrZero("/v2/openapi.yaml").Get
	resp := op.Responses.Codes.GetOrZero("200")
	mt, ok := resp.Content.Get("application/yaml")
	if !ok {
		t.Fatal("GET /v2/openapi.yaml 200 has no application/yaml content")
	}
	if s := mt.Schema.Schema(); !slices.Equal(s.Type, []string{"string"}) {
		t.Fatalf("GET /v2/openapi.yaml 200 schema type %v, want [string]", s.Type)
	}
	c := checker(t)
	header := http.Header{"Content-Type": []string{"application/yaml; charset=utf-8"}}
	req := httptest.NewRequest(http.MethodGet, "/v2/openapi.yaml", nil)
	if err := c.Check(req, 200, header, api.OpenAPIYAML); err != nil {
		t.Fatalf("the served document fails its own schema: %v", err)
	}
}
