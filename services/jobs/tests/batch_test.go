package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

type batchRow struct {
	Index       *int     `json:"index"`
	ExternalRef string   `json:"external_ref"`
	Action      string   `json:"action"`
	JobID       *int64   `json:"job_id"`
	Status      *string  `json:"status"`
	Errors      []string `json:"errors"`
}

type batchData struct {
	Mode    string         `json:"mode"`
	DryRun  bool           `json:"dry_run"`
	Counts  map[string]int `json:"counts"`
	Results []batchRow     `json:"results"`
}

// batchJobs is n valid jobs of a platform in city, refs prefix-0 ...; bad
// says which rows to break and how.
func batchJobs(prefix string, city int64, n int, bad map[int]func(map[string]any)) []map[string]any {
	out := make([]map[string]any, n)
	for i := range n {
		b := jobBody(fmt.Sprintf("%s opening %d", prefix, i), city)
		b["external_ref"] = fmt.Sprintf("%s-%d", prefix, i)
		b["salary_period"], b["sal_min"], b["sal_max"] = "hour", 12, 15
		if f := bad[i]; f != nil {
			f(b)
		}
		out[i] = b
	}
	return out
}

func postBatch(t *testing.T, id identity.Identity, body map[string]any, headers ...string) (resp, batchData) {
	t.Helper()
	r := do(t, appFlat, "POST", "/v2/jobs/batch", jsonBody(t, body), &id, headers...)
	var d batchData
	if r.Status == 200 {
		r.data(t, &d)
	}
	return r, d
}

// The sync case: 37 bad rows among 100. Every row answers in order;
// the 63 good ones are applied, each bad one carries the 422 messages a
// single POST of it gives, naming its field; a replay with the key is byte
// identical; the batch sent again changes nothing.
func TestBatchBadRowsAmongHundred(t *testing.T) {
	t.Parallel()
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4800, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	breakers := []func(map[string]any){
		func(b map[string]any) { b["salary_period"] = "fortnight" },
		func(b map[string]any) { delete(b, "title") },
		func(b map[string]any) { b["sal_min"], b["sal_max"] = 20, 10 },
		func(b map[string]any) { b["workplace_type"], b["is_remote"] = "hybrid", 1 },
		func(b map[string]any) { b["job_type"] = "gig" },
		func(b map[string]any) { b["id_city"] = 999999 },
		func(b map[string]any) { b["unknown"] = true },
	}
	bad := map[int]func(map[string]any){}
	for i := 0; len(bad) < 37; i++ {
		row := (i*7 + 3) % 100
		if bad[row] == nil {
			bad[row] = breakers[len(bad)%len(breakers)]
		}
	}
	jobs := batchJobs("b100", 4800, 100, bad)
	// Two more kinds of bad row: no reference, a reference twice.
	for i := 5; i < len(jobs); i++ {
		if bad[i] == nil {
			delete(jobs[i], "external_ref")
			bad[i] = func(map[string]any) {}
			break
		}
	}
	badCount := 38
	if bad[0] != nil {
		t.Fatal("row 0 must be good")
	}
	for i := 99; i >= 0; i-- {
		if bad[i] == nil {
			jobs[i]["external_ref"] = "b100-0" // row 0's
			bad[i] = func(map[string]any) {}
			badCount++
			break
		}
	}
	body := map[string]any{"jobs": jobs}
	r, d := postBatch(t, platform, body, "Idempotency-Key", "b100-key")
	if r.Status != 200 || len(d.Results) != 100 {
		t.Fatalf("%d %.2000s", r.Status, r.Body)
	}
	if d.Counts["created"] != 100-badCount || d.Counts["error"] != badCount {
		t.Fatalf("counts %v", d.Counts)
	}
	// Each applied row wrote its event, as a single POST does (webhooks,
	// alerts and the changes feed read them).
	var events int
	if err := pool.QueryRow(bgContext, `SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id
		WHERE j.owner_key_id = 4800 AND e.type = 'job.created'`).Scan(&events); err != nil || events != 100-badCount {
		t.Fatalf("%d job.created events (%v), want %d", events, err, 100-badCount)
	}
	for i, row := range d.Results {
		if row.Index == nil || *row.Index != i {
			t.Fatalf("row %d has index %v", i, row.Index)
		}
		if bad[i] != nil {
			if row.Action != "error" || len(row.Errors) == 0 || row.JobID != nil || row.Status != nil {
				t.Fatalf("row %d: %+v", i, row)
			}
			// The same messages as a single POST of the row (without the
			// batch's own rules: reference required, once per batch).
			single := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, jobs[i]), &platform)
			var singleErrs []string
			if single.Env.Error != nil {
				_ = json.Unmarshal(single.Env.Error.Details, &singleErrs)
			}
			switch {
			case jobs[i]["external_ref"] == nil:
				if !slices.Contains(row.Errors, "external_ref is required in a batch") {
					t.Fatalf("row %d: %v", i, row.Errors)
				}
			case single.Status == 201:
				if len(row.Errors) != 1 || row.Errors[0] != `external_ref "b100-0" is also row 0's: each job appears once in a batch` {
					t.Fatalf("row %d: %v", i, row.Errors)
				}
			case single.Status != 422 || !reflect.DeepEqual(singleErrs, row.Errors):
				t.Fatalf("row %d: batch %v, single %d %v", i, row.Errors, single.Status, singleErrs)
			}
			continue
		}
		if row.Action != "created" || row.JobID == nil || *row.Status != "active" || row.ExternalRef != fmt.Sprintf("b100-%d", i) {
			t.Fatalf("row %d: %+v", i, row)
		}
	}

	again := do(t, appFlat, "POST", "/v2/jobs/batch", jsonBody(t, body), &platform, "Idempotency-Key", "b100-key")
	if again.Status != 200 || !bytes.Equal(again.Body, r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %q\n%s\n%s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body, r.Body)
	}
	jobs[0]["title"] = "Changed under the same key"
	if other := do(t, appFlat, "POST", "/v2/jobs/batch", jsonBody(t, body), &platform, "Idempotency-Key", "b100-key"); other.Status != 422 ||
		!other.hasDetail("Idempotency-Key was already used with a different request body") {
		t.Fatalf("key reused: %d %s", other.Status, other.Body)
	}
	jobs[0]["title"] = "b100 opening 0"
	// Sent again, nothing changes but row 0, which the single POST of row 99
	// (row 0's reference, another title) rewrote above.
	_, d2 := postBatch(t, platform, body)
	if d2.Counts["unchanged"] != 100-badCount-1 || d2.Counts["updated"] != 1 || d2.Results[0].Action != "updated" ||
		d2.Counts["error"] != badCount {
		t.Fatalf("sent again: %v", d2.Counts)
	}
}

// mode=replace closes the platform's jobs missing from the batch; a dry
// run answers exactly what the run then does, and applies nothing.
func TestBatchReplaceAndDryRun(t *testing.T) {
	t.Parallel()
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4810, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	other := identity.Identity{Kind: identity.KindLive, KeyID: 4811, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	if r, d := postBatch(t, platform, map[string]any{"jobs": batchJobs("rp", 4810, 10, nil)}); r.Status != 200 || d.Counts["created"] != 10 {
		t.Fatalf("seed: %d %s", r.Status, r.Body)
	}
	if r, _ := postBatch(t, other, map[string]any{"jobs": batchJobs("rp", 4811, 3, nil)}); r.Status != 200 {
		t.Fatalf("other's: %d %s", r.Status, r.Body)
	}
	// A job of the platform's without a reference is not the batch's.
	plain := createOn(t, appFlat, platform, jobBody("No reference", 4810))

	// Keep 0-5 (2 changed, 4 a bad row: kept, not closed), add 10, drop 6-9.
	next := batchJobs("rp", 4810, 11, map[int]func(map[string]any){
		2: func(b map[string]any) { b["sal_max"] = 16 },
		4: func(b map[string]any) { b["salary_period"] = "never" },
	})
	next = append(next[:6], next[10])
	body := map[string]any{"jobs": next, "mode": "replace", "dry_run": true}
	r, dry := postBatch(t, platform, body)
	if r.Status != 200 || !dry.DryRun {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	var n int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE owner_key_id = 4810 AND status = 'active'`).Scan(&n)
	if n != 11 {
		t.Fatalf("the dry run changed something: %d active", n)
	}
	body["dry_run"] = false
	r, run := postBatch(t, platform, body)
	if r.Status != 200 || run.DryRun {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	want := map[string]int{"created": 1, "updated": 1, "unchanged": 4, "closed": 4, "error": 1}
	if !reflect.DeepEqual(run.Counts, want) || !reflect.DeepEqual(dry.Counts, want) {
		t.Fatalf("counts: run %v dry %v, want %v", run.Counts, dry.Counts, want)
	}
	if len(dry.Results) != len(run.Results) {
		t.Fatalf("dry %d results, run %d", len(dry.Results), len(run.Results))
	}
	for i := range run.Results {
		a, b := dry.Results[i], run.Results[i]
		if a.Action == "created" && a.JobID == nil && b.JobID != nil {
			b.JobID = nil // a dry run cannot know the new job's id
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("result %d: dry %+v, run %+v", i, a, b)
		}
	}
	closed := map[string]bool{}
	for _, row := range run.Results {
		if row.Action == "closed" {
			if row.Index != nil || *row.Status != "closed" {
				t.Fatalf("closed row: %+v", row)
			}
			closed[row.ExternalRef] = true
		}
	}
	if !reflect.DeepEqual(closed, map[string]bool{"rp-6": true, "rp-7": true, "rp-8": true, "rp-9": true}) {
		t.Fatalf("closed %v", closed)
	}
	var status string
	_ = pool.QueryRow(bgContext, `SELECT status FROM jobs WHERE id = $1`, plain.JobID).Scan(&status)
	if status != "active" {
		t.Fatalf("the job without a reference is %s", status)
	}
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE owner_key_id = 4811 AND status = 'active'`).Scan(&n)
	if n != 3 {
		t.Fatalf("another platform's jobs: %d active", n)
	}
	var events int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id
		WHERE j.owner_key_id = 4810 AND e.status = 'closed' AND e.prev_status = 'active'`).Scan(&events)
	if events != 4 {
		t.Fatalf("%d close events", events)
	}

	// An empty replace needs confirm_empty; confirmed (dry) it would close
	// every job with a reference the platform still has up.
	if r, _ := postBatch(t, platform, map[string]any{"jobs": []any{}, "mode": "replace"}); r.Status != 422 || !r.hasDetail("confirm_empty") {
		t.Fatalf("empty replace: %d %s", r.Status, r.Body)
	}
	_, empty := postBatch(t, platform, map[string]any{"jobs": []any{}, "mode": "replace", "confirm_empty": true, "dry_run": true})
	if empty.Counts["closed"] != 7 {
		t.Fatalf("empty replace (dry): %v", empty.Counts)
	}
}

func TestBatch422(t *testing.T) {
	t.Parallel()
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4820, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	for _, tc := range []struct {
		body   string
		detail string
	}{
		{`{"jobs":[]}`, "jobs must hold at least one job"},
		{`{}`, "jobs is required"},
		{`{"jobs":{}}`, "jobs must be an array"},
		{`{"jobs":[{}],"mode":"merge"}`, "mode must be one of upsert, replace"},
		{`{"jobs":[{}],"dry_run":"yes"}`, "dry_run must be a boolean"},
		{`{"jobs":[{}],"extra":1}`, `unknown field "extra"`},
		{jsonBody(t, map[string]any{"jobs": batchJobs("big", 4820, 1001, nil)}), "jobs must hold at most 1000 jobs"},
	} {
		r := do(t, appFlat, "POST", "/v2/jobs/batch", tc.body, &platform)
		if r.Status != 422 || !r.hasDetail(tc.detail) {
			t.Fatalf("%.80s: %d %s", tc.body, r.Status, r.Body)
		}
	}
	// A row that is not an object is that row's error.
	r, d := postBatch(t, platform, map[string]any{"jobs": []any{"x", batchJobs("ok", 4820, 1, nil)[0]}})
	if r.Status != 200 || d.Results[0].Action != "error" || d.Results[1].Action != "created" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// failingStore fails the upsert numbered so by left (1-based, counted
// across transactions): a batch whose process dies, or whose connection
// drops, in the middle of its rows.
type failingStore struct {
	jobbus.JobStorer
	left *atomic.Int64
}

func (s failingStore) Upsert(ctx context.Context, nj jobbus.NewJob) (jobbus.Written, error) {
	if s.left.Add(-1) == 0 {
		return jobbus.Written{}, errors.New("connection lost in the middle of the batch")
	}
	return s.JobStorer.Upsert(ctx, nj)
}

// failingTx hands failingStore to the transactions too.
type failingTx struct {
	jobbus.Transactor
	left *atomic.Int64
}

func (t failingTx) InTx(ctx context.Context, fn func(jobbus.Stores) error) error {
	return t.Transactor.InTx(ctx, func(tx jobbus.Stores) error { return fn(failing(tx, t.left)) })
}

// failing is s whose upserts fail as failingStore's.
func failing(s jobbus.Stores, left *atomic.Int64) jobbus.Stores {
	s.Tx, s.Jobs = failingTx{s.Tx, left}, failingStore{s.Jobs, left}
	return s
}

// A batch that fails at its 50th row applied nothing and recorded nothing;
// its retry with the same Idempotency-Key applies every row once, and the
// next retry replays that answer.
func TestBatchFailingMidwayAppliesNothing(t *testing.T) {
	t.Parallel()
	left := &atomic.Int64{}
	left.Store(50)
	app := appOn(busOn(failing(jobdb.New(pool).Stores(), left), baseURL, dirURL), false)
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4830, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	body := jsonBody(t, map[string]any{"jobs": batchJobs("mid", 4830, 80, nil)})
	count := func() (jobs, events int) {
		_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE owner_key_id = 4830`).Scan(&jobs)
		_ = pool.QueryRow(bgContext, `SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.owner_key_id = 4830`).Scan(&events)
		return jobs, events
	}
	if r := do(t, app, "POST", "/v2/jobs/batch", body, &platform, "Idempotency-Key", "mid-1"); r.Status != 500 {
		t.Fatalf("failing batch: %d %s", r.Status, r.Body)
	}
	if j, e := count(); j != 0 || e != 0 {
		t.Fatalf("a failed batch left %d jobs, %d events", j, e)
	}
	first := do(t, app, "POST", "/v2/jobs/batch", body, &platform, "Idempotency-Key", "mid-1")
	var d batchData
	first.data(t, &d)
	if first.Status != 200 || d.Counts["created"] != 80 {
		t.Fatalf("retry: %d %v", first.Status, d.Counts)
	}
	again := do(t, app, "POST", "/v2/jobs/batch", body, &platform, "Idempotency-Key", "mid-1")
	if again.Status != 200 || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second retry: %d %s", again.Status, again.Body)
	}
	if j, e := count(); j != 80 || e != 80 {
		t.Fatalf("%d jobs, %d events after the retries, want 80 and 80", j, e)
	}
}

type batchOp struct {
	OperationID string         `json:"operation_id"`
	Status      string         `json:"status"`
	Mode        string         `json:"mode"`
	Rows        int            `json:"rows"`
	Processed   int            `json:"processed"`
	URL         string         `json:"url"`
	Counts      map[string]int `json:"counts"`
	Results     []batchRow     `json:"results"`
}

// More than 100 jobs are kept as an operation (202) and applied 100 rows a
// transaction: 37 bad rows among 1000, a fault in the third chunk (the two
// before it stay applied, the operation goes on from there when run again:
// no row lost, none applied twice), the results in order once done, the
// POST's replay identical, another key's GET 404; then a replace of 120 of
// the jobs as an operation closes the others.
func TestBatchOperation(t *testing.T) {
	t.Parallel()
	left := &atomic.Int64{}
	left.Store(250)
	bus := busOn(failing(jobdb.New(pool).Stores(), left), baseURL, dirURL)
	app := appOn(bus, false)
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4840, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	bad := map[int]func(map[string]any){}
	for i := 0; len(bad) < 37; i++ {
		bad[(i*27+13)%1000] = func(b map[string]any) { b["salary_period"] = "fortnight" }
	}
	body := jsonBody(t, map[string]any{"jobs": batchJobs("op", 4840, 1000, bad)})
	r := do(t, app, "POST", "/v2/jobs/batch", body, &platform, "Idempotency-Key", "op-1")
	var op batchOp
	r.data(t, &op)
	if r.Status != 202 || op.Status != "pending" || op.Rows != 1000 || op.URL != "/v2/jobs/batch/"+op.OperationID {
		t.Fatalf("post: %d %s", r.Status, r.Body)
	}
	if again := do(t, app, "POST", "/v2/jobs/batch", body, &platform, "Idempotency-Key", "op-1"); again.Status != 202 ||
		!bytes.Equal(again.Body, r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	get := func(id identity.Identity) (resp, batchOp) {
		t.Helper()
		r := do(t, app, "GET", op.URL, "", &id)
		var o batchOp
		if r.Status == 200 {
			r.data(t, &o)
		}
		return r, o
	}
	ctx := context.Background()
	if _, err := bus.RunBatchOps(ctx); err == nil {
		t.Fatal("the fault did not happen")
	}
	if _, o := get(platform); o.Status != "pending" || o.Processed != 200 || o.Results != nil {
		t.Fatalf("after the fault: %+v", o)
	}
	if _, err := bus.RunBatchOps(ctx); err != nil {
		t.Fatal(err)
	}
	_, done := get(platform)
	if done.Status != "done" || done.Processed != 1000 || len(done.Results) != 1000 ||
		done.Counts["created"] != 963 || done.Counts["error"] != 37 {
		t.Fatalf("done: %s %d %d %v", done.Status, done.Processed, len(done.Results), done.Counts)
	}
	for i, row := range done.Results {
		if *row.Index != i || (bad[i] != nil) != (row.Action == "error") ||
			bad[i] != nil && row.Errors[0] != "salary_period must be one of hour, day, week, month, year" {
			t.Fatalf("row %d: %+v", i, row)
		}
	}
	var jobs, events int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE owner_key_id = 4840`).Scan(&jobs)
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.owner_key_id = 4840`).Scan(&events)
	if jobs != 963 || events != 963 {
		t.Fatalf("%d jobs and %d events, want 963 each", jobs, events)
	}
	other := identity.Identity{Kind: identity.KindLive, KeyID: 4841, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	if r, _ := get(other); r.Status != 404 {
		t.Fatalf("another key's GET: %d", r.Status)
	}

	// Replace with 120 of them, as an operation: the other 843 are closed.
	keep := batchJobs("op", 4840, 1000, bad)
	var rows []map[string]any
	for i := range keep {
		if bad[i] == nil && len(rows) < 120 {
			rows = append(rows, keep[i])
		}
	}
	r = do(t, app, "POST", "/v2/jobs/batch", jsonBody(t, map[string]any{"jobs": rows, "mode": "replace"}), &platform)
	r.data(t, &op)
	if r.Status != 202 {
		t.Fatalf("replace: %d %s", r.Status, r.Body)
	}
	if _, err := bus.RunBatchOps(ctx); err != nil {
		t.Fatal(err)
	}
	if _, o := get(platform); o.Status != "done" || o.Counts["unchanged"] != 120 || o.Counts["closed"] != 843 {
		t.Fatalf("replace: %s %v", o.Status, o.Counts)
	}
}
