package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const (
	liveKey       = "live platform key"
	importerKey   = "trusted importer"
	proSpaceKey   = "space 1 (Pro) key"
	plainSpaceKey = "space 2 (non-Pro) key"
	readOnlyKey   = "restricted read-only key"
)

func key(t *testing.T, kind string) string {
	t.Helper()
	k, ok := s.keys[kind]
	if !ok {
		t.Fatalf("no demo key %q in %v", kind, s.keys)
	}
	return k
}

type city struct {
	ID   string `json:"id_city"`
	Name string `json:"city_name"`
	Slug string `json:"city_slug"`
}

type jobResult struct {
	JobID          int64  `json:"job_id"`
	Status         string `json:"status"`
	Action         string `json:"action"`
	HashIdentifier string `json:"hash_identifier"`
	City           struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"city"`
	ViewURL     *string `json:"view_url"`
	PaymentURL  *string `json:"payment_url"`
	EditURL     string  `json:"edit_url"`
	UnpublishTo string  `json:"unpublish_url"`
}

type jobList struct {
	Jobs []struct {
		ID       int64  `json:"id_job"`
		Title    string `json:"title"`
		CitySlug string `json:"city_slug"`
	} `json:"jobs"`
	Total int `json:"total"`
}

func listed(t *testing.T, k, query string, id int64) bool {
	t.Helper()
	r := call(t, "GET", s.gateway+"/v2/jobs?"+query, k, "")
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.raw)
	}
	var l jobList
	r.into(t, &l)
	for _, j := range l.Jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// The main flow of a space owner: resolve a city, create a job, see it
// listed, replay the create with its Idempotency-Key, unpublish it.
func TestMainFlowThroughGateway(t *testing.T) {
	pro := key(t, proSpaceKey)

	r := call(t, "GET", s.gateway+"/v2/cities?search=berl", pro, "")
	var cities []city
	r.into(t, &cities)
	if r.status != 200 || len(cities) == 0 || cities[0].Slug != "berlin" {
		t.Fatalf("resolve city: %d %s", r.status, r.raw)
	}

	title := "E2E Community Manager " + randomHex(3)
	body := fmt.Sprintf(`{"title":%q,"company":"Factory","description":"<p>Run our <strong>events</strong></p><script>x()</script>",
		"job_type":"fulltime","tags":" Events, community ,events","id_city":%s,"external_url":"https://example.org/jobs/1?ref=old&x=1"}`,
		title, cities[0].ID)
	idem := "e2e-" + randomHex(8)
	created := call(t, "POST", s.gateway+"/v2/jobs", pro, body, "Idempotency-Key", idem)
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	var job jobResult
	created.into(t, &job)
	if job.Action != "created" || job.Status != "active" || job.City.Name != "Berlin" || job.ViewURL == nil ||
		!strings.Contains(job.EditURL, job.HashIdentifier) {
		t.Fatalf("creation result: %s", created.raw)
	}
	if created.header.Get("X-RateLimit-Limit") == "" {
		t.Fatal("write without rate-limit headers")
	}

	replay := call(t, "POST", s.gateway+"/v2/jobs", pro, body, "Idempotency-Key", idem)
	if replay.status != 201 || string(replay.env.Data) != string(created.env.Data) || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s (header %q)", replay.status, replay.raw, replay.header.Get("Idempotent-Replayed"))
	}

	if !listed(t, pro, "city=berlin", job.JobID) {
		t.Fatal("created job not listed")
	}
	if !listed(t, key(t, liveKey), "q="+strings.ReplaceAll(title[len(title)-6:], " ", "+"), job.JobID) {
		t.Fatal("created job not found by q")
	}

	// Another space may not unpublish it.
	other := call(t, "POST", s.gateway+"/v2/jobs/unpublish", key(t, plainSpaceKey), fmt.Sprintf(`{"job_id":%d}`, job.JobID))
	if other.status != 403 || other.env.Error.Code != "forbidden" {
		t.Fatalf("other space unpublish: %d %s", other.status, other.raw)
	}
	// Read-only keys never write.
	if r := call(t, "POST", s.gateway+"/v2/jobs/unpublish", key(t, readOnlyKey), fmt.Sprintf(`{"job_id":%d}`, job.JobID)); r.status != 403 {
		t.Fatalf("restricted unpublish: %d", r.status)
	}

	un := call(t, "POST", s.gateway+"/v2/jobs/unpublish", pro, fmt.Sprintf(`{"job_id":%d}`, job.JobID))
	var res struct {
		Status string `json:"status"`
		Action string `json:"action"`
	}
	un.into(t, &res)
	if un.status != 200 || res.Status != "expired" || res.Action != "unpublished" {
		t.Fatalf("unpublish: %d %s", un.status, un.raw)
	}
	if listed(t, pro, "city=berlin", job.JobID) {
		t.Fatal("unpublished job still listed")
	}
	again := call(t, "POST", s.gateway+"/v2/jobs/unpublish", pro, fmt.Sprintf(`{"job_id":%d}`, job.JobID))
	again.into(t, &res)
	if again.status != 200 || res.Action != "already_unpublished" {
		t.Fatalf("unpublish again: %d %s", again.status, again.raw)
	}
}

// A job posted by a non-Pro space starts as a draft with a next step; the
// trusted importer's starts active.
func TestInitialStatusThroughGateway(t *testing.T) {
	for _, tc := range []struct {
		key, status string
	}{{plainSpaceKey, "draft"}, {importerKey, "active"}} {
		body := fmt.Sprintf(`{"title":"Host %s","company":"Tejo","description":"Front desk","job_type":"parttime","tags":"host","city_name":"Lisbon"}`, randomHex(4))
		r := call(t, "POST", s.gateway+"/v2/jobs", key(t, tc.key), body)
		var job jobResult
		r.into(t, &job)
		if r.status != 201 || job.Status != tc.status {
			t.Fatalf("%s: %d %s", tc.key, r.status, r.raw)
		}
		if tc.status == "draft" && job.ViewURL != nil {
			t.Fatalf("draft has a view_url: %s", r.raw)
		}
	}
}

func TestValidationThroughGateway(t *testing.T) {
	r := call(t, "POST", s.gateway+"/v2/jobs", key(t, liveKey), `{"title":"","job_type":"gig","status":"active"}`)
	if r.status != 422 || r.env.Error.Code != "validation_error" || r.env.Error.Message != "Validation failed" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if !strings.HasPrefix(string(r.env.Error.Details), "[") {
		t.Fatalf("details not an array: %s", r.raw)
	}
	if r := call(t, "POST", s.gateway+"/v2/jobs", key(t, liveKey), `{"title":`); r.status != 400 || r.env.Error.Code != "bad_request" {
		t.Fatalf("bad json: %d %s", r.status, r.raw)
	}
}

// Every backend answers through the gateway, and refuses a direct call.
func TestEveryServiceRoutedAndGuarded(t *testing.T) {
	live := key(t, liveKey)
	for _, tc := range []struct {
		method, path, key, body string
		want                    int
	}{
		{"GET", "/v2", "", "", 200},
		{"GET", "/v2/jobs", live, "", 200},
		{"GET", "/v2/cities", live, "", 200},
		{"GET", "/v2/spaces?q=berlin", live, "", 200},
		{"GET", "/v2/city_spaces", live, "", 200},
		{"GET", "/v2/blog", "", "", 200},
		{"GET", "/v2/events", live, "", 200},
		{"GET", "/v2/vine/jobs", "", "", 200},
		{"GET", "/v2/vine/blog", "", "", 200},
		{"GET", "/v2/vine/events", "", "", 200},
		{"POST", "/v2/feedback", "", `{"message":"Great board","email":"a@example.org"}`, 201},
		{"GET", "/v2/events", "", "", 401},
		{"GET", "/v2/nope", live, "", 404},
		{"PUT", "/v2/jobs", live, "", 405},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			send := call
			if tc.want == 404 || tc.want == 405 {
				send = func(t *testing.T, method, url, key, body string, _ ...string) reply {
					return callUndocumented(t, method, url, key, body)
				}
			}
			r := send(t, tc.method, s.gateway+tc.path, tc.key, tc.body)
			if r.status != tc.want {
				t.Fatalf("%d %s", r.status, r.raw)
			}
		})
	}
	for name, base := range s.direct {
		path := map[string]string{"jobs": "/v2/jobs", "directory": "/v2/cities", "content": "/v2/blog", "community": "/v2/events"}[name]
		r := call(t, "GET", base+path, live, "")
		if r.status != http.StatusUnauthorized {
			t.Fatalf("direct call to %s: %d", name, r.status)
		}
	}
}

func TestHealthSeesEveryService(t *testing.T) {
	r := call(t, "GET", s.gateway+"/v2/health", key(t, liveKey), "")
	var h struct {
		Status   string `json:"status"`
		Services map[string]struct {
			Status string `json:"status"`
		} `json:"services"`
	}
	r.into(t, &h)
	if r.status != 200 || h.Status != "ok" || len(h.Services) != 4 {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	for name, st := range h.Services {
		if st.Status != "up" {
			t.Fatalf("%s is %s", name, st.Status)
		}
	}
}

// A space-scoped key sees only its own space's jobs.
func TestSpaceScopingThroughGateway(t *testing.T) {
	body := fmt.Sprintf(`{"title":"Scoped %s","company":"Tejo","description":"x","job_type":"freelance","tags":"x","city_name":"Lisbon"}`, randomHex(4))
	r := call(t, "POST", s.gateway+"/v2/jobs", key(t, importerKey), body)
	var job jobResult
	r.into(t, &job)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	if !listed(t, key(t, liveKey), "", job.JobID) {
		t.Fatal("platform key does not see the job")
	}
	if listed(t, key(t, proSpaceKey), "", job.JobID) {
		t.Fatal("space 1 key sees a job of no space")
	}
}
