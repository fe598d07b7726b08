package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/coworkjobs/coworkjobs/libs/htmltest"
)

// listedIDs returns the job ids GET /v2/jobs?query shows to key k.
func listedIDs(t *testing.T, gw, k, query string, hdr ...string) map[int64]bool {
	t.Helper()
	r := do(t, "GET", gw+"/v2/jobs?"+query, "", append([]string{"X-API-Key", k}, hdr...)...)
	if r.status != 200 {
		t.Fatalf("list ?%s: %s", query, r)
	}
	var l struct {
		Jobs []struct {
			ID        int64   `json:"id_job"`
			SpaceName *string `json:"space_name"`
		} `json:"jobs"`
	}
	r.into(t, &l)
	ids := map[int64]bool{}
	for _, j := range l.Jobs {
		ids[j.ID] = true
	}
	return ids
}

type spaceFixture struct {
	key     string
	name    string
	job     int64 // an active job of this space
	jobBody string
}

// spaceJob creates an active job in space id (with the trusted importer, which
// may name any confirmed space) and returns its id.
func spaceJob(t *testing.T, gw string, id int, body map[string]any) int64 {
	t.Helper()
	body["id_space"] = id
	b, _ := json.Marshal(body)
	r := do(t, "POST", gw+"/v2/jobs", string(b), "X-API-Key", key(t, importerKey))
	var cr createResult
	r.into(t, &cr)
	if r.status != 201 || cr.Status != "active" {
		t.Fatalf("fixture job in space %d: %s", id, r)
	}
	return cr.JobID
}

// A key of one space can never read or change another space's jobs, spaces
// or events. Every route of GET /v2 is classified: space-scoped routes are
// checked both ways (space 1 against space 2's data and back), and the rest
// must say why they hold no space's private data, so a new route fails the
// test until it is classified.
func TestSpaceKeysIsolatedEveryRoute(t *testing.T) {
	gw := shared.URL["gateway"]
	body := func(space int) map[string]any {
		return map[string]any{"title": fmt.Sprintf("Isolation %d %s", space, randomSuffix()), "company": "Isolated",
			"description": "<p>x</p>", "job_type": "parttime", "tags": "iso", "city_name": "Berlin",
			"external_url": "https://e.example/iso"}
	}
	b1, b2 := body(1), body(2)
	s1 := spaceFixture{key: key(t, space1Key), name: space1Name, job: spaceJob(t, gw, 1, b1)}
	s2 := spaceFixture{key: key(t, space2Key), name: space2Name, job: spaceJob(t, gw, 2, b2)}
	delete(b2, "id_space")
	raw2, _ := json.Marshal(b2)
	s2.jobBody = string(raw2)

	checks := map[string]func(t *testing.T, own, other spaceFixture){
		"GET /v2/jobs": func(t *testing.T, own, other spaceFixture) {
			for _, q := range []string{"", "space=" + url.QueryEscape(other.name), "id_space=2&space_id=2&sid=2",
				"city=lisbon", "q=isolation", "api_key=" + other.key} {
				ids := listedIDs(t, gw, own.key, q)
				if ids[other.job] {
					t.Fatalf("?%s: %s's key lists %s's job %d", q, own.name, other.name, other.job)
				}
			}
			if !listedIDs(t, gw, own.key, "")[own.job] {
				t.Fatalf("%s's key does not list its own job (the check above proves nothing)", own.name)
			}
			// A forged identity header is stripped at the gateway.
			forged := listedIDs(t, gw, own.key, "", "X-Coworkjobs-Identity", "eyJrbmQiOiJsaXZlIn0.AAAA")
			if forged[other.job] {
				t.Fatal("a forged identity header widened the listing")
			}
		},
		"POST /v2/jobs": func(t *testing.T, own, other spaceFixture) {
			spaceID := map[string]int{space1Name: 2, space2Name: 1}[own.name]
			r := do(t, "POST", gw+"/v2/jobs", fmt.Sprintf(`{"title":"Cross %s","company":"X","description":"x","job_type":"fulltime","tags":"x","city_name":"Berlin","id_space":%d}`, randomSuffix(), spaceID),
				"X-API-Key", own.key)
			if r.status != 403 || r.code() != "forbidden" {
				t.Fatalf("%s's key posting into space %d: %s", own.name, spaceID, r)
			}
		},
		"POST /v2/jobs/unpublish": func(t *testing.T, own, other spaceFixture) {
			r := do(t, "POST", gw+"/v2/jobs/unpublish", fmt.Sprintf(`{"job_id":%d}`, other.job), "X-API-Key", own.key)
			if r.status != 403 || r.code() != "forbidden" {
				t.Fatalf("%s's key unpublishing %s's job: %s", own.name, other.name, r)
			}
			if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND status = 'active'`, other.job); n != 1 {
				t.Fatalf("%s's job changed", other.name)
			}
		},
		"GET /v2/spaces": func(t *testing.T, own, other spaceFixture) {
			for _, q := range []string{"", "q=lisbon", "q=berlin"} {
				r := do(t, "GET", gw+"/v2/spaces?"+q, "", "X-API-Key", own.key)
				var spaces []struct {
					Name string `json:"space_name"`
				}
				r.into(t, &spaces)
				for _, sp := range spaces {
					if sp.Name != own.name {
						t.Fatalf("?%s: %s's key sees space %q", q, own.name, sp.Name)
					}
				}
			}
		},
		"GET /v2/events": func(t *testing.T, own, other spaceFixture) {
			ownID, otherID := map[string]int64{space1Name: 1, space2Name: 2}[own.name], map[string]int64{space1Name: 1, space2Name: 2}[other.name]
			r := do(t, "GET", gw+"/v2/events?per_page=50", "", "X-API-Key", own.key)
			var l struct {
				Events []struct {
					SpaceID *int64 `json:"space_id"`
				} `json:"events"`
			}
			r.into(t, &l)
			if len(l.Events) == 0 {
				t.Fatalf("%s's key sees no events (the check proves nothing)", own.name)
			}
			for _, e := range l.Events {
				if e.SpaceID == nil || *e.SpaceID != ownID {
					t.Fatalf("%s's key sees an event of space %v", own.name, e.SpaceID)
				}
			}
			r = do(t, "GET", gw+fmt.Sprintf("/v2/events?space=%d", otherID), "", "X-API-Key", own.key)
			if r.status != 403 || r.code() != "forbidden" {
				t.Fatalf("%s's key asking for space %d's events: %s", own.name, otherID, r)
			}
		},
	}
	for _, ev := range []string{"publish", "pause", "resume", "relist", "close"} {
		checks["POST /v2/jobs/"+ev] = func(t *testing.T, own, other spaceFixture) {
			r := do(t, "POST", gw+"/v2/jobs/"+ev, fmt.Sprintf(`{"job_id":%d}`, other.job), "X-API-Key", own.key)
			if r.status != 403 || r.code() != "forbidden" {
				t.Fatalf("%s's key: %s %s's job: %s", own.name, ev, other.name, r)
			}
			if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND status = 'active'`, other.job); n != 1 {
				t.Fatalf("%s's job changed", other.name)
			}
		}
	}
	checks["GET /v2/jobs/{id_job}"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "GET", gw+fmt.Sprintf("/v2/jobs/%d", other.job), "", "X-API-Key", own.key)
		if r.status != 403 || r.code() != "forbidden" || strings.Contains(r.String(), "Isolation") {
			t.Fatalf("%s's key reading %s's job: %s", own.name, other.name, r)
		}
		if r := do(t, "GET", gw+fmt.Sprintf("/v2/jobs/%d", own.job), "", "X-API-Key", own.key); r.status != 200 {
			t.Fatalf("%s's key reading its own job: %s (the check above proves nothing)", own.name, r)
		}
	}
	// Batches (issue 46): a row naming the other space is that row's 403,
	// and a replace closes nothing of the other space's; an operation is
	// its poster's only.
	checks["POST /v2/jobs/batch"] = func(t *testing.T, own, other spaceFixture) {
		otherID := map[string]int64{space1Name: 1, space2Name: 2}[other.name]
		row := body(int(otherID))
		row["external_ref"], row["id_space"] = "iso-"+randomSuffix(), otherID
		b, _ := json.Marshal(map[string]any{"mode": "replace", "jobs": []any{row}})
		r := do(t, "POST", gw+"/v2/jobs/batch", string(b), "X-API-Key", own.key)
		var out struct {
			Results []struct {
				Action string   `json:"action"`
				Errors []string `json:"errors"`
			} `json:"results"`
		}
		r.into(t, &out)
		if len(out.Results) != 1 || out.Results[0].Action != "error" {
			t.Fatalf("%s's key batching a job into %s: %s", own.name, other.name, r)
		}
		if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND status = 'active'`, other.job); n != 1 {
			t.Fatalf("%s's replace touched %s's job", own.name, other.name)
		}
	}
	checks["GET /v2/jobs/batch/{operation_id}"] = func(t *testing.T, own, other spaceFixture) {
		// The other space's operation: 101 rows, all refused, so it writes nothing.
		rows := make([]any, 101)
		for i := range rows {
			rows[i] = map[string]any{"external_ref": fmt.Sprintf("iso-op-%d", i)}
		}
		b, _ := json.Marshal(map[string]any{"mode": "upsert", "jobs": rows})
		r := do(t, "POST", gw+"/v2/jobs/batch", string(b), "X-API-Key", other.key)
		var op struct {
			OperationID string `json:"operation_id"`
		}
		r.into(t, &op)
		if r.status != 202 || op.OperationID == "" {
			t.Fatalf("%s's operation: %s", other.name, r)
		}
		if r := do(t, "GET", gw+"/v2/jobs/batch/"+op.OperationID, "", "X-API-Key", own.key); r.status != 404 {
			t.Fatalf("%s's key reading %s's operation: %s", own.name, other.name, r)
		}
		if r := do(t, "GET", gw+"/v2/jobs/batch/"+op.OperationID, "", "X-API-Key", other.key); r.status != 200 {
			t.Fatalf("%s's key reading its own operation: %s (the check above proves nothing)", other.name, r)
		}
	}
	// Job statistics (issue 47): another space's job's numbers are
	// refused like the job; the space's totals list only its own jobs.
	checks["GET /v2/jobs/{id_job}/stats"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "GET", gw+fmt.Sprintf("/v2/jobs/%d/stats", other.job), "", "X-API-Key", own.key)
		if r.status != 403 && r.status != 404 || strings.Contains(r.String(), `"views"`) {
			t.Fatalf("%s's key reading %s's job stats: %s", own.name, other.name, r)
		}
		// Its own job's: the numbers, or 403 naming the plan that has them.
		if r := do(t, "GET", gw+fmt.Sprintf("/v2/jobs/%d/stats", own.job), "", "X-API-Key", own.key); r.status != 200 &&
			!(r.status == 403 && strings.Contains(r.String(), "Pro")) {
			t.Fatalf("%s's key reading its own job's stats: %s", own.name, r)
		}
	}
	checks["GET /v2/stats"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "GET", gw+"/v2/stats", "", "X-API-Key", own.key)
		if r.status == 403 && strings.Contains(r.String(), "Pro") {
			return // a plan without statistics: nothing of anyone's
		}
		var s struct {
			TopJobs []struct {
				IDJob int64 `json:"id_job"`
			} `json:"top_jobs"`
		}
		r.into(t, &s)
		for _, j := range s.TopJobs {
			if j.IDJob == other.job {
				t.Fatalf("%s's totals list %s's job %d", own.name, other.name, other.job)
			}
		}
	}
	// The key API: each space's manager key (made by the operators'
	// command) against the other space's keys.
	spaceIDs := map[string]int64{space1Name: 1, space2Name: 2}
	managers := map[string]string{}
	manager := func(t *testing.T, f spaceFixture) string {
		if k, ok := managers[f.name]; ok {
			return k
		}
		managers[f.name] = newKey(t, shared, "-space", strconv.FormatInt(spaceIDs[f.name], 10), "-scopes", "keys:manage,read,jobs:write,webhooks:manage")
		return managers[f.name]
	}
	type apiKey struct {
		ID      int64  `json:"id"`
		SpaceID *int64 `json:"space_id"`
		Status  string `json:"status"`
	}
	// otherKey is a key of other's space, made over the key API.
	otherKey := func(t *testing.T, other spaceFixture) apiKey {
		r := do(t, "POST", gw+"/v2/keys", `{"name":"isolation target","scopes":["jobs:read"]}`, "X-API-Key", manager(t, other))
		var k apiKey
		r.into(t, &k)
		if r.status != 201 || k.SpaceID == nil || *k.SpaceID != spaceIDs[other.name] {
			t.Fatalf("%s's manager creating a key: %s", other.name, r)
		}
		return k
	}
	untouched := func(t *testing.T, k apiKey) {
		if n := count(t, db, `SELECT count(*) FROM gateway.api_keys WHERE id = $1 AND revoked_at IS NULL AND replaced_by IS NULL`, k.ID); n != 1 {
			t.Fatalf("key %d of another space changed", k.ID)
		}
	}
	checks["GET /v2/keys"] = func(t *testing.T, own, other spaceFixture) {
		otherKey(t, other)
		r := do(t, "GET", gw+"/v2/keys", "", "X-API-Key", manager(t, own))
		var l struct {
			Keys []apiKey `json:"keys"`
		}
		r.into(t, &l)
		if len(l.Keys) == 0 {
			t.Fatalf("%s's manager lists no key (the check proves nothing)", own.name)
		}
		for _, k := range l.Keys {
			if k.SpaceID == nil || *k.SpaceID != spaceIDs[own.name] {
				t.Fatalf("%s's manager lists key %d of space %v", own.name, k.ID, k.SpaceID)
			}
		}
	}
	checks["POST /v2/keys"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "POST", gw+"/v2/keys", fmt.Sprintf(`{"name":"into %d","scopes":["jobs:read"],"space_id":%d}`, spaceIDs[other.name], spaceIDs[other.name]),
			"X-API-Key", manager(t, own))
		if r.status != 422 {
			t.Fatalf("%s's manager naming space %d: %s", own.name, spaceIDs[other.name], r)
		}
		r = do(t, "POST", gw+"/v2/keys", `{"name":"own","scopes":["jobs:read"]}`, "X-API-Key", manager(t, own))
		var k apiKey
		r.into(t, &k)
		if r.status != 201 || k.SpaceID == nil || *k.SpaceID != spaceIDs[own.name] {
			t.Fatalf("%s's manager's key lands in space %v: %s", own.name, k.SpaceID, r)
		}
	}
	checks["GET /v2/keys/{id}"] = func(t *testing.T, own, other spaceFixture) {
		k := otherKey(t, other)
		if r := do(t, "GET", gw+fmt.Sprintf("/v2/keys/%d", k.ID), "", "X-API-Key", manager(t, own)); r.status != 404 {
			t.Fatalf("%s's manager reading %s's key: %s", own.name, other.name, r)
		}
	}
	checks["DELETE /v2/keys/{id}"] = func(t *testing.T, own, other spaceFixture) {
		k := otherKey(t, other)
		if r := do(t, "DELETE", gw+fmt.Sprintf("/v2/keys/%d?allow_no_manager=true", k.ID), "", "X-API-Key", manager(t, own)); r.status != 404 {
			t.Fatalf("%s's manager revoking %s's key: %s", own.name, other.name, r)
		}
		untouched(t, k)
	}
	checks["POST /v2/keys/{id}/rotate"] = func(t *testing.T, own, other spaceFixture) {
		k := otherKey(t, other)
		if r := do(t, "POST", gw+fmt.Sprintf("/v2/keys/%d/rotate", k.ID), `{"grace_seconds":60}`, "X-API-Key", manager(t, own)); r.status != 404 {
			t.Fatalf("%s's manager rotating %s's key: %s", own.name, other.name, r)
		}
		untouched(t, k)
	}
	checks["GET /v2/keys/events"] = func(t *testing.T, own, other spaceFixture) {
		k := otherKey(t, other)
		r := do(t, "GET", gw+"/v2/keys/events?limit=100", "", "X-API-Key", manager(t, own))
		var l struct {
			Events []struct {
				KeyID int64 `json:"key_id"`
			} `json:"events"`
		}
		r.into(t, &l)
		if len(l.Events) == 0 {
			t.Fatalf("%s's manager sees no event (the check proves nothing)", own.name)
		}
		for _, e := range l.Events {
			if e.KeyID == k.ID || count(t, db, `SELECT count(*) FROM gateway.api_keys WHERE id = $1 AND space_id = $2`, e.KeyID, spaceIDs[own.name]) != 1 {
				t.Fatalf("%s's manager sees an event of key %d", own.name, e.KeyID)
			}
		}
	}
	// The changes feed: a space's key hears of its own space's jobs only.
	checks["GET /v2/jobs/changes"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "GET", gw+"/v2/jobs/changes?since=2020-01-01T00:00:00Z&limit=500", "", "X-API-Key", own.key)
		if r.status != 200 && r.status != 410 {
			t.Fatalf("%s's changes: %s", own.name, r)
		}
		if strings.Contains(r.String(), fmt.Sprintf(`"id_job":%d,`, other.job)) || strings.Contains(r.String(), fmt.Sprintf(`"id_job":%d}`, other.job)) {
			t.Fatalf("%s's key hears of %s's job %d", own.name, other.name, other.job)
		}
	}
	// Webhook endpoints: each space's manager against the other's endpoint.
	type endpoint struct {
		ID int64 `json:"id"`
	}
	otherHook := func(t *testing.T, other spaceFixture) endpoint {
		r := do(t, "POST", gw+"/v2/webhooks", `{"url":"https://hooks.example/iso","events":["job.published"]}`, "X-API-Key", manager(t, other))
		var e endpoint
		r.into(t, &e)
		if r.status != 201 || e.ID == 0 {
			t.Fatalf("%s's manager creating an endpoint: %s", other.name, r)
		}
		return e
	}
	hookUntouched := func(t *testing.T, e endpoint) {
		if n := count(t, db, `SELECT count(*) FROM jobs.webhook_endpoints WHERE id = $1 AND url = 'https://hooks.example/iso'`, e.ID); n != 1 {
			t.Fatalf("endpoint %d of another space changed", e.ID)
		}
	}
	checks["POST /v2/webhooks"] = func(t *testing.T, own, other spaceFixture) {
		e := otherHook(t, own) // made by own: it must be own's, and other's manager must not see it
		if r := do(t, "GET", gw+fmt.Sprintf("/v2/webhooks/%d", e.ID), "", "X-API-Key", manager(t, other)); r.status != 404 {
			t.Fatalf("%s's manager reads %s's new endpoint: %s", other.name, own.name, r)
		}
	}
	checks["GET /v2/webhooks"] = func(t *testing.T, own, other spaceFixture) {
		e := otherHook(t, other)
		r := do(t, "GET", gw+"/v2/webhooks", "", "X-API-Key", manager(t, own))
		if r.status != 200 || strings.Contains(r.String(), fmt.Sprintf(`"id":%d,`, e.ID)) {
			t.Fatalf("%s's manager lists %s's endpoint: %s", own.name, other.name, r)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v2/webhooks/%d", ""},
		{"PATCH", "/v2/webhooks/%d", `{"url":"https://evil.example/x"}`},
		{"DELETE", "/v2/webhooks/%d", ""},
		{"POST", "/v2/webhooks/%d/rotate-secret", ""},
		{"POST", "/v2/webhooks/%d/ping", ""},
		{"GET", "/v2/webhooks/%d/deliveries", ""},
		{"POST", "/v2/webhooks/%d/recover", `{"since":"2026-11-30T00:00:00Z"}`},
	} {
		name := c.method + " " + strings.ReplaceAll(c.path, "%d", "{id_webhook}")
		checks[name] = func(t *testing.T, own, other spaceFixture) {
			e := otherHook(t, other)
			if r := do(t, c.method, gw+fmt.Sprintf(c.path, e.ID), c.body, "X-API-Key", manager(t, own)); r.status != 404 {
				t.Fatalf("%s's manager: %s on %s's endpoint: %s", own.name, name, other.name, r)
			}
			hookUntouched(t, e)
		}
	}
	checks["POST /v2/webhooks/{id_webhook}/deliveries/{id_delivery}/redeliver"] = func(t *testing.T, own, other spaceFixture) {
		e := otherHook(t, other)
		if r := do(t, "POST", gw+fmt.Sprintf("/v2/webhooks/%d/deliveries/1/redeliver", e.ID), "", "X-API-Key", manager(t, own)); r.status != 404 {
			t.Fatalf("%s's manager redelivering on %s's endpoint: %s", own.name, other.name, r)
		}
	}
	// Import sources: a space's source is its space's; another space's key
	// finds it on no route (404), and it stays as it was.
	otherSource := func(t *testing.T, other spaceFixture) int64 {
		spaceID := map[string]int64{space1Name: 1, space2Name: 2}[other.name]
		var id int64
		if err := db.QueryRow(context.Background(), `INSERT INTO jobs.import_sources (space_id, key_id, kind, url, feed_url, interval_seconds)
			VALUES ($1, 0, 'json', 'https://feeds.example/iso.json', 'https://feeds.example/iso.json', 3600) RETURNING id`, spaceID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sourceUntouched := func(t *testing.T, id int64) {
		if n := count(t, db, `SELECT count(*) FROM jobs.import_sources WHERE id = $1`, id); n != 1 {
			t.Fatalf("another space's import source %d was deleted", id)
		}
	}
	checks["POST /v2/import/sources"] = func(t *testing.T, own, other spaceFixture) {
		r := do(t, "POST", gw+"/v2/import/sources", `{"kind":"json","url":"https://feeds.example/iso.json"}`, "X-API-Key", own.key)
		switch {
		case r.status == 403 && r.code() == "forbidden": // a space that is not Pro
		case r.status == 201:
			var src struct {
				ID int64 `json:"id"`
			}
			r.into(t, &src)
			if r := do(t, "GET", gw+fmt.Sprintf("/v2/import/sources/%d", src.ID), "", "X-API-Key", other.key); r.status != 404 {
				t.Fatalf("%s's key reads %s's new import source: %s", other.name, own.name, r)
			}
		default:
			t.Fatalf("%s's key registering a source: %s", own.name, r)
		}
	}
	checks["GET /v2/import/sources"] = func(t *testing.T, own, other spaceFixture) {
		id := otherSource(t, other)
		r := do(t, "GET", gw+"/v2/import/sources", "", "X-API-Key", own.key)
		if r.status != 200 || strings.Contains(r.String(), fmt.Sprintf(`"id":%d,`, id)) {
			t.Fatalf("%s's key lists %s's import source: %s", own.name, other.name, r)
		}
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v2/import/sources/%d"},
		{"DELETE", "/v2/import/sources/%d"},
		{"GET", "/v2/import/sources/%d/runs"},
		{"POST", "/v2/import/sources/%d/sync"},
	} {
		name := c.method + " " + strings.ReplaceAll(c.path, "%d", "{id_source}")
		checks[name] = func(t *testing.T, own, other spaceFixture) {
			id := otherSource(t, other)
			if r := do(t, c.method, gw+fmt.Sprintf(c.path, id), "", "X-API-Key", own.key); r.status != 404 {
				t.Fatalf("%s's key: %s on %s's import source: %s", own.name, name, other.name, r)
			}
			sourceUntouched(t, id)
		}
	}
	// Routes that hold no space's private data, and why.
	unscoped := map[string]string{
		"POST /v2/payments/stripe/webhook": "signed by Stripe, no key: changes only the job the signed session names",
		"GET /v2":                          "public route table",
		"GET /v2/health":                   "service health, no tenant data",
		"GET /v2/openapi.json":             "public document",
		"GET /v2/openapi.yaml":             "public document",
		"GET /v2/docs":                     "public reference page",
		"GET /v2/vine/jobs":                "public feed of active (published) jobs",
		"GET /v2/cities":                   "shared directory of cities",
		"GET /v2/city_spaces":              "the spec's exception: every confirmed space, whatever the key",
		"GET /v2/blog":                     "public blog",
		"GET /v2/vine/blog":                "public feed",
		"GET /v2/vine/events":              "public feed of upcoming events",
		"POST /v2/feedback":                "public write, owned by no space",
		"POST /v2/newsletters/subscribe":   "public write, owned by no space",
		"GET /v2/newsletters/confirm":      "token-addressed, owned by no space",
		"POST /v2/newsletters/confirm":     "token-addressed, owned by no space",
		"GET /v2/newsletters/unsubscribe":  "token-addressed, owned by no space",
		"POST /v2/newsletters/unsubscribe": "token-addressed, owned by no space",
		"POST /v2/alerts":                  "public write, owned by no space (a platform key's alerts still need the seeker's click)",
		"GET /v2/alerts/confirm":           "token-addressed, owned by no space",
		"POST /v2/alerts/confirm":          "token-addressed, owned by no space",
		"GET /v2/alerts/manage":            "token-addressed, owned by no space",
		"POST /v2/alerts/manage":           "token-addressed, owned by no space",
		"GET /v2/alerts/unsubscribe":       "token-addressed, owned by no space",
		"POST /v2/alerts/unsubscribe":      "token-addressed, owned by no space",
		"GET /v2/alerts/feed":              "token-addressed (a feed token, which manages nothing), owned by no space",
		"GET /v2/privacy/erase":            "token-addressed (an address sealed by the server), owned by no space; GET erases nothing",
		"POST /v2/privacy/erase":           "token-addressed (an address sealed by the server), owned by no space",
		"GET /robots.txt":                  "public crawling rules",
		"GET /sitemap.xml":                 "public pages of active (published) jobs",
		"GET /feeds/jobs.xml":              "public feed of active (published) jobs",
		"GET /embed/jobs.js":               "a space's active (published) jobs, public on their pages already",
	}
	for _, rt := range routes(t, gw) {
		name := rt.Method + " " + rt.Path
		check, scoped := checks[name]
		if !scoped {
			if _, ok := unscoped[name]; !ok {
				t.Errorf("%s is not classified: add a cross-space check or say why it holds no space's data", name)
			}
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			check(t, s1, s2)
			check(t, s2, s1)
		})
	}

	// The same fingerprint in another space is another job: space 1 posting
	// space 2's exact job creates its own and leaves space 2's untouched.
	t.Run("fingerprintIsPerSpace", func(t *testing.T) {
		var before string
		if err := db.QueryRow(context.Background(), `SELECT updated_at::text FROM jobs.jobs WHERE id = $1`, s2.job).Scan(&before); err != nil {
			t.Fatal(err)
		}
		r := do(t, "POST", gw+"/v2/jobs", s2.jobBody, "X-API-Key", s1.key)
		var cr createResult
		r.into(t, &cr)
		if r.status != 201 || cr.Action != "created" || cr.JobID == s2.job {
			t.Fatalf("space 1 posting space 2's job: %s", r)
		}
		var after string
		_ = db.QueryRow(context.Background(), `SELECT updated_at::text FROM jobs.jobs WHERE id = $1`, s2.job).Scan(&after)
		if after != before {
			t.Fatal("space 2's job was updated by space 1's create")
		}
	})
	// An Idempotency-Key is the key holder's own: another space using the same
	// string gets its own answer, never the first space's stored one.
	t.Run("idempotencyKeyIsPerAPIKey", func(t *testing.T) {
		idem := "shared-" + randomSuffix()
		first := do(t, "POST", gw+"/v2/jobs", jobBody("Idem owner "+randomSuffix()), "X-API-Key", s1.key, "Idempotency-Key", idem)
		other := do(t, "POST", gw+"/v2/jobs", jobBody("Idem other "+randomSuffix()), "X-API-Key", s2.key, "Idempotency-Key", idem)
		if first.status != 201 || other.status != 201 || other.header.Get("Idempotent-Replayed") != "" || string(other.raw) == string(first.raw) {
			t.Fatalf("second space got the first's answer: %s / %s", first, other)
		}
	})
}

// Values that would change SQL if they were spliced into it are data: no
// 500, nothing stored or lost, and a search for them finds what their words
// find (q searches words: punctuation separates them), never everything.
func TestInjectionIsData(t *testing.T) {
	gw := shared.URL["gateway"]
	k := key(t, liveKey)
	before := rowCounts(t)
	all := len(listedIDs(t, gw, k, ""))
	if all == 0 {
		t.Fatal("no jobs listed: the comparison below proves nothing")
	}
	payloads := []string{`' OR '1'='1`, `'; DROP TABLE jobs.jobs; --`, `") OR 1=1 --`, `%' OR 1=1 --`, `\'; SELECT pg_sleep(10); --`,
		`1 UNION SELECT key_hash FROM gateway.api_keys`, `$1`, `___`, `%%%`, `\%\_`}
	for _, p := range payloads {
		for _, q := range []string{"q", "city", "job_type"} {
			r := do(t, "GET", gw+"/v2/jobs?"+q+"="+url.QueryEscape(p), "", "X-API-Key", k)
			if r.status >= 500 {
				t.Fatalf("?%s=%q: %s", q, p, r)
			}
			if r.status != 200 {
				continue
			}
			var l struct {
				Jobs []struct {
					ID int64 `json:"id_job"`
				} `json:"jobs"`
			}
			r.into(t, &l)
			if q != "q" {
				if len(l.Jobs) != 0 {
					t.Fatalf("?%s=%q matched %d of %d jobs", q, p, len(l.Jobs), all)
				}
				continue
			}
			// q is words (docs/search.md): the payload finds exactly what
			// its letters and digits find, typed as plain words, never all.
			words := strings.FieldsFunc(p, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
			want := listedIDs(t, gw, k, "q="+url.QueryEscape(strings.Join(words, " ")))
			if len(l.Jobs) != len(want) || len(l.Jobs) == all {
				t.Fatalf("?q=%q matched %d of %d jobs; its words %q match %d", p, len(l.Jobs), all, words, len(want))
			}
			for _, j := range l.Jobs {
				if !want[j.ID] {
					t.Fatalf("?q=%q matched job %d, which its words %q do not", p, j.ID, words)
				}
			}
		}
		for _, path := range []string{"/v2/cities?search=", "/v2/cities?q=", "/v2/spaces?q=", "/v2/blog?tag=", "/v2/blog?category=", "/v2/events?city="} {
			if r := do(t, "GET", gw+path+url.QueryEscape(p), "", "X-API-Key", k); r.status >= 500 {
				t.Fatalf("%s%q: %s", path, p, r)
			}
		}
		b, _ := json.Marshal(map[string]any{"title": p, "company": p, "description": p, "job_type": p, "tags": p, "city_name": p})
		if r := do(t, "POST", gw+"/v2/jobs", string(b), "X-API-Key", k); r.status != 422 {
			t.Fatalf("create with %q everywhere: %s", p, r)
		}
	}
	after := rowCounts(t)
	for tb, n := range before {
		if after[tb] != n {
			t.Errorf("%s: %d rows before, %d after", tb, n, after[tb])
		}
	}
}

// descriptionAllow is the spec's basic HTML of a job description.
var descriptionAllow = htmltest.Allow{Elements: strings.Fields("p br ul ol li h2 h3 strong em a"),
	Attributes: map[string][]string{"a": {"href", "rel"}}, Schemes: []string{"http", "https", "mailto"}}

// A description full of script vectors, sent through the gateway, is stored
// and served without anything a browser would run (checked on the HTML5 parse
// of what is stored, and on the public feed's summary).
func TestStoredDescriptionCarriesNoScript(t *testing.T) {
	gw := shared.URL["gateway"]
	vectors := `<p>Real text</p><script>alert(1)</script><img src=x onerror=alert(1)><svg onload=alert(1)>` +
		`<a href="javascript:alert(1)">a</a><a href="java&#x09;script:alert(1)">b</a><a href=" JAVASCRIPT:alert(1)">c</a>` +
		`<iframe src="javascript:alert(1)"></iframe><math><mtext><table><mglyph><style><img src=x onerror=alert(1)>` +
		`<p style="background:url(javascript:alert(1))" onclick="x()">d</p><a href="data:text/html;base64,PHNjcmlwdD4=">e</a>` +
		`<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript><!--<script>x</script>-->`
	b, _ := json.Marshal(map[string]any{"title": "XSS " + randomSuffix(), "company": "Sanitised", "description": vectors,
		"job_type": "fulltime", "tags": "xss", "city_name": "Berlin"})
	r := do(t, "POST", gw+"/v2/jobs", string(b), "X-API-Key", key(t, importerKey))
	var cr createResult
	r.into(t, &cr)
	if r.status != 201 {
		t.Fatalf("create: %s", r)
	}
	var stored string
	if err := db.QueryRow(context.Background(), `SELECT description FROM jobs.jobs WHERE id = $1`, cr.JobID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if p := htmltest.Problems(stored, descriptionAllow); p != nil || !strings.Contains(stored, "Real text") {
		t.Fatalf("stored description %q carries %q", stored, p)
	}
	feed := do(t, "GET", gw+"/v2/vine/jobs?limit=50", "")
	var f struct {
		Items []struct {
			ID      string `json:"id"`
			Summary string `json:"summary"`
		} `json:"items"`
	}
	feed.into(t, &f)
	for _, it := range f.Items {
		if it.ID == fmt.Sprintf("job:%d", cr.JobID) {
			if strings.ContainsAny(it.Summary, "<>") || strings.Contains(strings.ToLower(it.Summary), "alert") {
				t.Fatalf("feed summary %q carries markup or script", it.Summary)
			}
			return
		}
	}
	t.Fatalf("job %d not in the feed", cr.JobID)
}

// publicEverywhere are the reach routes outside /v2: the same public
// answer for every caller, key or none, so shared caches may keep them.
var publicEverywhere = map[string]bool{"/robots.txt": true, "/sitemap.xml": true, "/feeds/jobs.xml": true, "/embed/jobs.js": true}

// Security headers are set on every route's answer, errors included; CORS
// answers preflights deliberately: the allowed methods and headers (keys,
// idempotency), exposed rate-limit and replay headers, never credentials.
func TestSecurityHeadersAndCORS(t *testing.T) {
	gw := shared.URL["gateway"]
	k := key(t, liveKey)
	want := map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
	paths := []string{"/v2/nope"}
	for _, rt := range routes(t, gw) {
		if rt.Method == "GET" {
			paths = append(paths, rt.Path)
		}
	}
	for _, p := range paths {
		for _, hdr := range [][]string{{"X-API-Key", k}, nil} {
			r := send("GET", gw+p, nil, hdr...)
			for h, v := range want {
				if got := r.header.Get(h); got != v {
					t.Errorf("GET %s (%d): %s = %q, want %q", p, r.status, h, got, v)
				}
			}
			if r.header.Get("Cache-Control") == "" {
				t.Errorf("GET %s (%d): no Cache-Control", p, r.status)
			}
			if hdr != nil && r.status == 200 && r.header.Get("Cache-Control") != "no-store" && !strings.HasPrefix(r.header.Get("Cache-Control"), "private") &&
				!strings.HasPrefix(p, "/v2/vine/") && !strings.HasPrefix(p, "/v2/openapi") && p != "/v2/docs" && p != "/v2" && p != "/v2/blog" &&
				!publicEverywhere[p] {
				t.Errorf("GET %s with a key is cacheable by shared caches: %q", p, r.header.Get("Cache-Control"))
			}
		}
	}
	pre := send("OPTIONS", gw+"/v2/jobs", nil, "Origin", "https://board.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "X-API-Key, Idempotency-Key, Content-Type")
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	for _, h := range []string{"x-api-key", "idempotency-key", "content-type"} {
		if !strings.Contains(strings.ToLower(pre.header.Get("Access-Control-Allow-Headers")), h) {
			t.Errorf("preflight does not allow %s: %q", h, pre.header.Get("Access-Control-Allow-Headers"))
		}
	}
	// The methods the API routes (DELETE and PATCH since the key and
	// webhook APIs), and no other.
	if m := pre.header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") || !strings.Contains(m, "DELETE") || strings.Contains(m, "PUT") {
		t.Errorf("preflight methods %q", m)
	}
	if pre.header.Get("Access-Control-Allow-Credentials") == "true" {
		t.Error("credentials allowed cross-origin")
	}
	got := send("GET", gw+"/v2/jobs", nil, "Origin", "https://board.example", "X-API-Key", k)
	for _, h := range []string{"X-RateLimit-Remaining", "Idempotent-Replayed", "X-Request-ID"} {
		if !strings.Contains(strings.ToLower(got.header.Get("Access-Control-Expose-Headers")), strings.ToLower(h)) {
			t.Errorf("%s not exposed: %q", h, got.header.Get("Access-Control-Expose-Headers"))
		}
	}
}

// With CORS_ALLOW_ORIGINS set, only those origins are allowed, on proxied
// answers as on preflights; any other origin gets no Allow-Origin.
func TestCORSConfiguredOrigins(t *testing.T) {
	p := privateSystem(t)
	gw, k := p.sys.URL["gateway"], p.sys.Keys[liveKey]
	for _, origin := range []string{"https://board.example", "https://evil.example"} {
		allowed := origin == "https://board.example"
		r := send("GET", gw+"/v2/jobs", nil, "Origin", origin, "X-API-Key", k)
		pre := send("OPTIONS", gw+"/v2/jobs", nil, "Origin", origin, "Access-Control-Request-Method", "POST")
		for name, got := range map[string]reply{"GET": r, "preflight": pre} {
			acao := got.header.Get("Access-Control-Allow-Origin")
			if allowed && acao != origin || !allowed && acao != "" {
				t.Errorf("%s from %s: Access-Control-Allow-Origin %q", name, origin, acao)
			}
		}
		if allowed && !strings.Contains(r.header.Get("Vary"), "Origin") {
			t.Errorf("answer for an allowed origin does not vary by Origin: %q", r.header.Get("Vary"))
		}
	}
}
