// Package imports runs the suite with Temporal and the jobs worker, and
// drives feed-pull import sources through the gateway against the real
// PostgreSQL: each format's fixture served by a local HTTP server, polls
// through Temporal, a removed position closed by the next poll and nothing
// else, an unchanged feed costing one conditional GET and no write, and
// the ownership and outbound rules.
package imports

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_imports", &dbURL, nil)) }

const fixtures = "../../../services/jobs/internal/business/importbus/feeds/testdata/"

// feedServer serves feeds by path with an ETag (of the body) and a
// Last-Modified, answering 304 to a matching If-None-Match; it keeps each
// request's conditional headers.
type feedServer struct {
	mu    sync.Mutex
	feeds map[string][]byte
	asked map[string][]http.Header // by path
}

func (f *feedServer) set(path string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.feeds[path] = body
}

func (f *feedServer) requests(path string) []http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]http.Header(nil), f.asked[path]...)
}

func (f *feedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	body, ok := f.feeds[r.URL.Path]
	f.asked[r.URL.Path] = append(f.asked[r.URL.Path], r.Header.Clone())
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", "Mon, 07 Dec 2026 10:00:00 GMT")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(body)
}

func newFeedServer(t *testing.T) (*feedServer, string) {
	f := &feedServer{feeds: map[string][]byte{}, asked: map[string][]http.Header{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtures + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var checker = contract.MustNew()

// call sends a request through the gateway, checks the answer against the
// document, and decodes data into out (when given and 2xx).
func call(t *testing.T, method, url, key, body string, out any) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, method, url, suite.Body(body), "X-API-Key", key)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if err := checker.Check(req, res.StatusCode, res.Header, raw); err != nil {
		t.Errorf("contract: %s %s: %v", method, url, err)
	}
	if out != nil && res.StatusCode < 300 {
		var env struct{ Data json.RawMessage }
		if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Data, out) != nil {
			t.Fatalf("%s %s: %s", method, url, raw)
		}
	}
	return res.StatusCode, string(raw)
}

func wait(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

type run struct {
	ID          int64          `json:"id"`
	NotModified bool           `json:"not_modified"`
	Positions   int            `json:"positions"`
	Counts      map[string]int `json:"counts"`
	RowErrors   []struct {
		Index  int      `json:"index"`
		Ref    string   `json:"ref"`
		Errors []string `json:"errors"`
	} `json:"row_errors"`
	Error *string `json:"error"`
}

type source struct {
	ID        int64  `json:"id"`
	Kind      string `json:"kind"`
	RefPrefix string `json:"external_ref_prefix"`
	LastRun   *run   `json:"last_run"`
}

// runsOf returns a source's runs, newest first.
func runsOf(t *testing.T, gw, key string, id int64) []run {
	t.Helper()
	var l struct{ Runs []run }
	if st, raw := call(t, "GET", fmt.Sprintf("%s/v2/import/sources/%d/runs", gw, id), key, "", &l); st != 200 {
		t.Fatalf("runs of %d: %s", id, raw)
	}
	return l.Runs
}

// waitRuns waits for source id's n-th run and returns it.
func waitRuns(t *testing.T, gw, key string, id int64, n int) run {
	t.Helper()
	var rs []run
	wait(t, 120*time.Second, fmt.Sprintf("run %d of source %d", n, id), func() bool {
		rs = runsOf(t, gw, key, id)
		return len(rs) >= n
	})
	if len(rs) != n {
		t.Fatalf("source %d has %d runs, want %d", id, len(rs), n)
	}
	return rs[0]
}

type jobRow struct {
	ID                                           int64
	Ref, Title, Status, JobType, Workplace, City string
	SalaryPeriod                                 string
	Version                                      int64
}

func jobsWithPrefix(t *testing.T, db *pgxpool.Pool, prefix string) map[string]jobRow {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT j.id, j.external_ref, j.title, j.status, j.job_type, j.workplace_type,
		coalesce(j.city_name, ''), j.salary_period, (SELECT count(*) FROM jobs.job_events e WHERE e.job_id = j.id)
		FROM jobs.jobs j WHERE starts_with(j.external_ref, $1)`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]jobRow{}
	for rows.Next() {
		var j jobRow
		if err := rows.Scan(&j.ID, &j.Ref, &j.Title, &j.Status, &j.JobType, &j.Workplace, &j.City, &j.SalaryPeriod, &j.Version); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(j.Ref, prefix)] = j
	}
	return out
}

func newKey(t *testing.T, sys *suite.Suite, args ...string) string {
	t.Helper()
	out, err := sys.Run(context.Background(), "gateway-keys", append([]string{"create", "-name", "imports", "-json"}, args...)...)
	if err != nil {
		t.Fatalf("gateway-keys: %v %s", err, out)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return k.Key
}

func TestImportSourcesThroughTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	temporal := faults.Temporal(t)
	feeds, base := newFeedServer(t)
	sys := suite.StartTest(t, suite.Options{
		Name: "imports", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "JOBS_RELAY_INTERVAL=200ms",
			"WEBHOOKS_ALLOW_HTTP=true", "WEBHOOKS_ALLOW_ADDRESSES=loopback"},
	})
	gw := sys.URL["gateway"]
	db, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	imp := sys.Keys["trusted importer"]

	files := map[string]string{"greenhouse": "greenhouse.json", "lever": "lever.json", "ashby": "ashby.json",
		"personio": "personio.xml", "json": "jobs.json"}
	for kind, file := range files {
		feeds.set("/"+kind, fixture(t, file))
	}
	// The key's own job, posted directly, and a reference in the sources'
	// namespace refused.
	var own struct {
		Results []struct {
			JobID  int64  `json:"job_id"`
			Action string `json:"action"`
		}
	}
	ownBody := `{"mode":"upsert","jobs":[{"external_ref":"own-1","title":"Own Host","company":"Own Co","description":"<p>x</p>","job_type":"fulltime","tags":"own","city_name":"Berlin"}]}`
	if st, raw := call(t, "POST", gw+"/v2/jobs/batch", imp, ownBody, &own); st != 200 || own.Results[0].Action != "created" {
		t.Fatalf("own job: %s", raw)
	}
	if st, raw := call(t, "POST", gw+"/v2/jobs", imp, `{"external_ref":"src:1:x","title":"Sneaky","company":"X","description":"x","job_type":"fulltime","tags":"x","city_name":"Berlin"}`, nil); st != 422 ||
		!strings.Contains(raw, "external_ref must not start with") {
		t.Fatalf("a direct post into a source's references: %d %s", st, raw)
	}

	// One source per format; each is polled at once.
	srcs := map[string]source{}
	for _, kind := range []string{"greenhouse", "lever", "ashby", "personio", "json"} {
		body := fmt.Sprintf(`{"kind":%q,"url":%q,"company":"Hub Spaces","city_name":"Berlin","tags":"coworking","interval_minutes":15}`, kind, base+"/"+kind)
		var s source
		if st, raw := call(t, "POST", gw+"/v2/import/sources", imp, body, &s); st != 201 || s.RefPrefix != fmt.Sprintf("src:%d:", s.ID) {
			t.Fatalf("register %s: %d %s", kind, st, raw)
		}
		srcs[kind] = s
	}
	for kind, s := range srcs {
		r := waitRuns(t, gw, imp, s.ID, 1)
		if r.Error != nil || r.Positions != 2 || r.Counts["created"] != 2 || r.Counts["error"] != 0 {
			t.Fatalf("%s's first run: %+v", kind, r)
		}
		if h := feeds.requests("/" + kind); len(h) != 1 || h[0].Get("If-None-Match") != "" {
			t.Fatalf("%s: the first poll's requests %v", kind, h)
		}
	}
	// Mapped fields, by each source's own ids.
	for kind, want := range map[string]map[string]jobRow{
		"greenhouse": {"4012345": {Title: "Community Manager", JobType: "fulltime", City: "Berlin", Workplace: "on_site"},
			"4012346": {Title: "Part-time Front Desk Host", JobType: "parttime", Workplace: "remote"}},
		"lever": {"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0": {Title: "Events Intern", JobType: "internship", City: "Porto", Workplace: "on_site", SalaryPeriod: "hour"},
			"5ac21346-8e0c-4494-8e7a-3eb92ff77902": {Title: "Space Operations Lead", City: "Lisbon", Workplace: "hybrid", SalaryPeriod: "year"}},
		"ashby": {"7c3e1a52-6f0b-4f7e-9a55-0d4c1f2e3b4a": {Title: "Barista & Community Host", JobType: "parttime", City: "Amsterdam", Workplace: "on_site"},
			"99999999-8888-7777-6666-555555555555": {JobType: "freelance", Workplace: "remote"}},
		"personio": {"1204567": {Title: "Community Manager (m/w/d)", City: "Munich"}, "1204568": {JobType: "parttime", City: "Hamburg"}},
		"json":     {"desk-1": {Title: "Night Host", JobType: "parttime"}, "desk-2": {Workplace: "remote"}},
	} {
		got := jobsWithPrefix(t, db, srcs[kind].RefPrefix)
		for ref, w := range want {
			g, ok := got[ref]
			if !ok || g.Status != "active" {
				t.Fatalf("%s: no active job %q among %+v", kind, ref, got)
			}
			for _, c := range [][2]string{{w.Title, g.Title}, {w.JobType, g.JobType}, {w.City, g.City}, {w.Workplace, g.Workplace}, {w.SalaryPeriod, g.SalaryPeriod}} {
				if c[0] != "" && c[0] != c[1] {
					t.Errorf("%s %s: %q, want %q (%+v)", kind, ref, c[1], c[0], g)
				}
			}
		}
	}
	before := map[string]map[string]jobRow{}
	for kind, s := range srcs {
		before[kind] = jobsWithPrefix(t, db, s.RefPrefix)
	}
	ownBefore := jobsWithPrefix(t, db, "own-")

	// A position removed from the Greenhouse board: the next poll closes
	// its job, and nothing else.
	var gh struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(fixture(t, "greenhouse.json"), &gh); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"jobs": gh.Jobs[:1]})
	feeds.set("/greenhouse", b)
	var synced source
	if st, raw := call(t, "POST", fmt.Sprintf("%s/v2/import/sources/%d/sync", gw, srcs["greenhouse"].ID), imp, "", &synced); st != 202 {
		t.Fatalf("sync: %d %s", st, raw)
	}
	r := waitRuns(t, gw, imp, srcs["greenhouse"].ID, 2)
	if r.Error != nil || r.NotModified || r.Counts["closed"] != 1 || r.Counts["unchanged"] != 1 || r.Counts["created"]+r.Counts["updated"] != 0 {
		t.Fatalf("the poll after a removal: %+v", r)
	}
	h := feeds.requests("/greenhouse")
	if len(h) != 2 || h[1].Get("If-None-Match") == "" || h[1].Get("If-Modified-Since") != "Mon, 07 Dec 2026 10:00:00 GMT" {
		t.Fatalf("the second poll was not conditional: %v", h)
	}
	after := jobsWithPrefix(t, db, srcs["greenhouse"].RefPrefix)
	if after["4012346"].Status != "closed" || after["4012345"].Status != "active" || after["4012345"].Version != before["greenhouse"]["4012345"].Version {
		t.Fatalf("after the removal: %+v", after)
	}
	for kind, s := range srcs {
		if kind == "greenhouse" {
			continue
		}
		if got := jobsWithPrefix(t, db, s.RefPrefix); fmt.Sprint(got) != fmt.Sprint(before[kind]) {
			t.Fatalf("%s's jobs changed by greenhouse's poll: %+v, were %+v", kind, got, before[kind])
		}
	}
	if got := jobsWithPrefix(t, db, "own-"); fmt.Sprint(got) != fmt.Sprint(ownBefore) {
		t.Fatalf("the key's own jobs changed: %+v, were %+v", got, ownBefore)
	}

	// Unchanged: one conditional GET, a run with not_modified, zero writes.
	var events0 int
	_ = db.QueryRow(context.Background(), `SELECT count(*) FROM jobs.job_events`).Scan(&events0)
	if st, raw := call(t, "POST", fmt.Sprintf("%s/v2/import/sources/%d/sync", gw, srcs["lever"].ID), imp, "", nil); st != 202 {
		t.Fatalf("sync: %d %s", st, raw)
	}
	r = waitRuns(t, gw, imp, srcs["lever"].ID, 2)
	if !r.NotModified || r.Counts["created"]+r.Counts["updated"]+r.Counts["unchanged"]+r.Counts["closed"]+r.Counts["error"] != 0 {
		t.Fatalf("the unchanged poll: %+v", r)
	}
	if h := feeds.requests("/lever"); len(h) != 2 || h[1].Get("If-None-Match") == "" || h[1].Get("If-Modified-Since") == "" {
		t.Fatalf("lever's requests: %v", h)
	}
	var events1 int
	_ = db.QueryRow(context.Background(), `SELECT count(*) FROM jobs.job_events`).Scan(&events1)
	if events1 != events0 || fmt.Sprint(jobsWithPrefix(t, db, srcs["lever"].RefPrefix)) != fmt.Sprint(before["lever"]) {
		t.Fatalf("an unchanged poll wrote: %d job events before, %d after", events0, events1)
	}

	// The importer's own replace closes none of the sources' jobs.
	if st, raw := call(t, "POST", gw+"/v2/jobs/batch", imp, strings.Replace(ownBody, `"upsert"`, `"replace"`, 1), nil); st != 200 || strings.Contains(raw, `"closed"`) && strings.Contains(raw, `"action":"closed"`) {
		t.Fatalf("the key's replace: %d %s", st, raw)
	}
	if got := jobsWithPrefix(t, db, srcs["json"].RefPrefix); got["desk-1"].Status != "active" {
		t.Fatalf("a direct replace closed a source's job: %+v", got)
	}

	// Ownership: another owner's source is not found on every route.
	other := newKey(t, sys, "-space", "1", "-scopes", "read,jobs:write")
	id := srcs["json"].ID
	for _, c := range [][2]string{{"GET", "/v2/import/sources/%d"}, {"GET", "/v2/import/sources/%d/runs"},
		{"POST", "/v2/import/sources/%d/sync"}, {"DELETE", "/v2/import/sources/%d"}} {
		if st, raw := call(t, c[0], gw+fmt.Sprintf(c[1], id), other, "", nil); st != 404 {
			t.Fatalf("another key: %s %s: %d %s", c[0], c[1], st, raw)
		}
	}
	var l struct{ Sources []source }
	if st, raw := call(t, "GET", gw+"/v2/import/sources", other, "", &l); st != 200 || len(l.Sources) != 0 {
		t.Fatalf("another key lists: %s", raw)
	}
	if st, raw := call(t, "GET", gw+"/v2/import/sources", imp, "", &l); st != 200 || len(l.Sources) != 5 || l.Sources[0].LastRun == nil {
		t.Fatalf("the importer lists: %s", raw)
	}
	// A Pro space registers its own; a space that is not Pro may not.
	var pro source
	feeds.set("/json-pro", fixture(t, "jobs.json"))
	if st, raw := call(t, "POST", gw+"/v2/import/sources", other, fmt.Sprintf(`{"kind":"json","url":%q}`, base+"/json-pro"), &pro); st != 201 {
		t.Fatalf("a Pro space's source: %d %s", st, raw)
	}
	if st, raw := call(t, "GET", fmt.Sprintf("%s/v2/import/sources/%d", gw, pro.ID), imp, "", nil); st != 404 {
		t.Fatalf("the importer reads the space's source: %d %s", st, raw)
	}
	nonPro := newKey(t, sys, "-space", "2", "-scopes", "read,jobs:write")
	if st, raw := call(t, "POST", gw+"/v2/import/sources", nonPro, fmt.Sprintf(`{"kind":"json","url":%q}`, base+"/json"), nil); st != 403 {
		t.Fatalf("a space that is not Pro: %d %s", st, raw)
	}

	// Refused: private and metadata addresses, a short interval, no company.
	for body, field := range map[string]string{ //nolint:gosec // G101: bodies naming a board token, not a credential
		`{"kind":"json","url":"http://169.254.169.254/latest/meta-data"}`:               "url must not name",
		`{"kind":"json","url":"http://10.0.0.7/jobs.json"}`:                             "url must not name",
		`{"kind":"json","url":"http://[fd00::1]/jobs.json"}`:                            "url must not name",
		`{"kind":"json","url":"https://feeds.example/jobs.json","interval_minutes":14}`: "interval_minutes must be between",
		`{"kind":"lever","token":"deskhub"}`:                                            "company is required",
		`{"kind":"greenhouse","token":"a/b","company":"X"}`:                             "token must be a board token",
		`{"kind":"workday","url":"https://feeds.example/x"}`:                            "kind must be one of",
		`{"kind":"json","url":"https://feeds.example/x","mode":"upsert"}`:               "mode must be replace",
	} {
		if st, raw := call(t, "POST", gw+"/v2/import/sources", imp, body, nil); st != 422 || !strings.Contains(raw, field) {
			t.Errorf("%s: %d %s, want 422 naming %q", body, st, raw, field)
		}
	}

	// A sync acknowledged while jobs-worker is down is not lost: its
	// wake-up waits in the outbox and the source stays due.
	if err := sys.Kill("jobs-worker"); err != nil {
		t.Fatal(err)
	}
	personio := strings.Replace(string(fixture(t, "personio.xml")), "<id>1204568</id>", "<id>1204569</id>", 1)
	feeds.set("/personio", []byte(personio))
	if st, raw := call(t, "POST", fmt.Sprintf("%s/v2/import/sources/%d/sync", gw, srcs["personio"].ID), imp, "", nil); st != 202 {
		t.Fatalf("sync with the worker down: %d %s", st, raw)
	}
	if err := sys.Start(context.Background(), "jobs-worker"); err != nil {
		t.Fatal(err)
	}
	r = waitRuns(t, gw, imp, srcs["personio"].ID, 2)
	if r.Error != nil || r.Counts["created"] != 1 || r.Counts["closed"] != 1 || r.Counts["unchanged"] != 1 {
		t.Fatalf("the sync made while the worker was down: %+v", r)
	}
	if got := jobsWithPrefix(t, db, srcs["personio"].RefPrefix); got["1204568"].Status != "closed" || got["1204569"].Status != "active" {
		t.Fatalf("personio's jobs after the renamed position: %+v", got)
	}

	// Deletion: the source and its runs go, its jobs stay.
	if st, raw := call(t, "DELETE", fmt.Sprintf("%s/v2/import/sources/%d", gw, id), imp, "", nil); st != 200 {
		t.Fatalf("delete: %d %s", st, raw)
	}
	if st, _ := call(t, "GET", fmt.Sprintf("%s/v2/import/sources/%d", gw, id), imp, "", nil); st != 404 {
		t.Fatalf("deleted source: %d", st)
	}
	if got := jobsWithPrefix(t, db, srcs["json"].RefPrefix); got["desk-1"].Status != "active" {
		t.Fatalf("the deleted source's jobs: %+v", got)
	}
	n := len(feeds.requests("/json"))
	time.Sleep(2 * time.Second) // the deletion's wake-up ends the workflow: no more fetches
	if got := len(feeds.requests("/json")); got != n {
		t.Fatalf("the deleted source was fetched again (%d, then %d)", n, got)
	}

	// A 300-position source: one poll converges (every position created),
	// and unchanged it costs one conditional request and no write. The
	// times are logged for docs/benchmarks.md, not asserted.
	var big strings.Builder
	big.WriteString(`{"jobs":[`)
	for i := range 300 {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"external_ref":"p-%d","title":"Community Host %d","company":"Big Desk","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"community","city_name":"Berlin"}`, i, i)
	}
	big.WriteString(`]}`)
	feeds.set("/big", []byte(big.String()))
	start := time.Now()
	var bs source
	if st, raw := call(t, "POST", gw+"/v2/import/sources", imp, fmt.Sprintf(`{"kind":"json","url":%q}`, base+"/big"), &bs); st != 201 {
		t.Fatalf("register the 300-position source: %d %s", st, raw)
	}
	r = waitRuns(t, gw, imp, bs.ID, 1)
	if r.Error != nil || r.Positions != 300 || r.Counts["created"] != 300 || r.Counts["error"] != 0 {
		t.Fatalf("the 300-position source's first poll: %+v", r)
	}
	t.Logf("300 positions: registered to converged in %v", time.Since(start).Round(time.Millisecond))
	if got := len(jobsWithPrefix(t, db, bs.RefPrefix)); got != 300 {
		t.Fatalf("%d jobs, want 300", got)
	}
	start = time.Now()
	if st, raw := call(t, "POST", fmt.Sprintf("%s/v2/import/sources/%d/sync", gw, bs.ID), imp, "", nil); st != 202 {
		t.Fatalf("sync: %d %s", st, raw)
	}
	r = waitRuns(t, gw, imp, bs.ID, 2)
	if h := feeds.requests("/big"); !r.NotModified || len(h) != 2 || h[1].Get("If-None-Match") == "" {
		t.Fatalf("the unchanged 300-position source: %+v, %d requests", r, len(h))
	}
	t.Logf("300 positions unchanged: sync to recorded 304 run in %v", time.Since(start).Round(time.Millisecond))
}
