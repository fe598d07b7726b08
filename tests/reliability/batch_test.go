package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// batchOperation is the part of a batch operation the test reads.
type batchOperation struct {
	OperationID string         `json:"operation_id"`
	Status      string         `json:"status"`
	Processed   int            `json:"processed"`
	URL         string         `json:"url"`
	Counts      map[string]int `json:"counts"`
	Results     []struct {
		Index  *int   `json:"index"`
		Action string `json:"action"`
		JobID  *int64 `json:"job_id"`
	} `json:"results"`
}

// SIGKILL of the jobs service in the middle of a 1 000-job batch operation
// (after its first chunk committed, before its last): once jobs is started
// again its runner goes on from the last committed chunk, and the batch ends
// with every good row applied exactly once: 963 jobs and 963 job.created
// events for 963 good rows among 1 000, the 37 bad ones errors in order.
// Not parallel: nothing else may be talking to jobs while it is down.
func TestJobsKilledMidBatchOperation(t *testing.T) {
	noteFailure(t)
	gw := shared.URL["gateway"]
	k := newKey(t, shared, "-scopes", "write", "-trusted-importer")
	prefix := "kill" + randomSuffix()
	rows := make([]string, 1000)
	bad := 0
	for i := range rows {
		period := "hour"
		if i%27 == 13 && bad < 37 {
			period, bad = "fortnight", bad+1
		}
		rows[i] = fmt.Sprintf(`{"external_ref":"%s-%d","title":"%s porter %d","company":"Reliability Ltd","description":"<p>Nights</p>",`+
			`"job_type":"parttime","tags":"ops","city_name":"Berlin","salary_period":%q,"sal_min":11,"sal_max":14}`, prefix, i, prefix, i, period)
	}
	r := do(t, "POST", gw+"/v2/jobs/batch", `{"jobs":[`+strings.Join(rows, ",")+`]}`, "X-API-Key", k, "Idempotency-Key", prefix)
	var op batchOperation
	r.into(t, &op)
	if r.status != 202 {
		t.Fatalf("post: %s", r)
	}
	get := func() (batchOperation, bool) {
		g := send("GET", gw+op.URL, nil, "X-API-Key", k)
		var o batchOperation
		return o, g.status == 200 && jsonInto(g, &o) == nil
	}
	killedAt := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		o, ok := get()
		if ok && o.Processed > 0 && o.Status != "done" {
			if err := shared.Kill("jobs"); err != nil {
				t.Fatal(err)
			}
			killedAt = o.Processed
			break
		}
		if ok && o.Status == "done" {
			t.Fatal("the operation finished before the kill: the test proved nothing")
		}
	}
	if killedAt < 0 {
		t.Fatal("the operation never started")
	}
	var processedWhileDown int
	_ = db.QueryRow(context.Background(), `SELECT next_row FROM jobs.batch_operations WHERE id = $1`, op.OperationID).Scan(&processedWhileDown)
	if err := shared.Start(context.Background(), "jobs"); err != nil {
		t.Fatal(err)
	}
	var done batchOperation
	eventually(t, 60*time.Second, "the operation done after the restart", func() bool {
		o, ok := get()
		done = o
		return ok && o.Status == "done"
	})
	t.Logf("killed at %d of 1000 rows processed (%d committed while down)", killedAt, processedWhileDown)
	if processedWhileDown >= 1000 {
		t.Fatal("every row was committed before the kill: the test proved nothing")
	}
	if done.Counts["created"] != 963 || done.Counts["error"] != 37 || len(done.Results) != 1000 {
		t.Fatalf("done: %v, %d results", done.Counts, len(done.Results))
	}
	for i, row := range done.Results {
		if row.Index == nil || *row.Index != i {
			t.Fatalf("result %d has index %v", i, row.Index)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE external_ref LIKE $1`, prefix+"-%"); n != 963 {
		t.Fatalf("%d jobs, want 963", n)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs.job_events e JOIN jobs.jobs j ON j.id = e.job_id
		WHERE j.external_ref LIKE $1 AND e.type = 'job.created'`, prefix+"-%"); n != 963 {
		t.Fatalf("%d job.created events, want 963", n)
	}
	// The POST again with its key: the operation's 202, nothing more.
	if again := do(t, "POST", gw+"/v2/jobs/batch", `{"jobs":[`+strings.Join(rows, ",")+`]}`, "X-API-Key", k, "Idempotency-Key", prefix); again.status != 202 ||
		string(again.raw) != string(r.raw) {
		t.Fatalf("replay: %s", again)
	}
}
