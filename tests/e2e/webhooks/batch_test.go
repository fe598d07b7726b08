package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// batchReceiver keeps each answered delivery once by webhook-id (delivery
// is at least once).
type batchReceiver struct {
	mu   sync.Mutex
	seen map[string]bool
	got  []message
}

func (r *batchReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m message
	_ = json.Unmarshal(b, &m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := req.Header.Get("webhook-id"); !r.seen[id] {
		r.seen[id] = true
		r.got = append(r.got, m)
	}
	w.WriteHeader(204)
}

// byJob is each job's event types in the order received, and its versions.
func (r *batchReceiver) byJob() (map[int64][]string, map[int64][]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	types, versions := map[int64][]string{}, map[int64][]int64{}
	for _, m := range r.got {
		types[m.Data.IDJob] = append(types[m.Data.IDJob], m.Type)
		versions[m.Data.IDJob] = append(versions[m.Data.IDJob], m.Data.Event.Version)
	}
	return types, versions
}

// A batch's jobs reach webhooks as single posts do, and a single post made
// while the batch is applied is not lost behind it: a 150-job batch (an
// operation), single posts before, during and after it, then an update of
// ten of the batch's jobs; every job's job.created reaches the endpoint
// once, each updated job's job.updated after its job.created, versions in
// order per job. How long a single waits behind a batch is a measurement
// (tests/bench/webhooks -phases batch, docs/benchmarks.md), not asserted.
func TestBatchWebhooksLoseNothingInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)
	rcv := &batchReceiver{seen: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	sys := suite.StartTest(t, suite.Options{
		Name: "webhooks_batch", DatabaseURL: dbURL, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "JOBS_RELAY_INTERVAL=200ms",
			"WEBHOOKS_ALLOW_HTTP=true", "WEBHOOKS_ALLOW_ADDRESSES=loopback"},
	})
	out, err := sys.Run(ctx, "gateway-keys", "create", "-name", "batch hooks", "-space", "1", "-rate-limit", "100000",
		"-scopes", "read,jobs:write,webhooks:manage", "-json")
	if err != nil {
		t.Fatalf("gateway-keys: %v %s", err, out)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	gw := sys.URL["gateway"]
	body := fmt.Sprintf(`{"url":%q,"events":["job.created","job.updated"]}`, srv.URL+"/hook")
	if st := call(t, "POST", gw+"/v2/webhooks", k.Key, body, nil); st != 201 {
		t.Fatalf("register: %d", st)
	}
	prefix := fmt.Sprintf("wb%d", time.Now().UnixNano()%1_000_000)
	job := func(i int, title string) string {
		return fmt.Sprintf(`{"external_ref":"%s-%d","title":"%s %d","company":"Factory","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`,
			prefix, i, title, i)
	}
	var singles []int64
	single := func(n int) {
		var j struct {
			JobID int64 `json:"job_id"`
		}
		b := fmt.Sprintf(`{"title":"Single Host %s %d","company":"Factory","description":"<p>Host.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`, prefix, n)
		if st := call(t, "POST", gw+"/v2/jobs", k.Key, b, &j); st != 201 {
			t.Fatalf("single %d: %d", n, st)
		}
		singles = append(singles, j.JobID)
	}
	single(0)
	rows := make([]string, 150)
	for i := range rows {
		rows[i] = job(i, "Batch Host")
	}
	var op struct {
		URL     string `json:"url"`
		Status  string `json:"status"`
		Results []struct {
			Action string `json:"action"`
			JobID  *int64 `json:"job_id"`
		} `json:"results"`
	}
	if st := call(t, "POST", gw+"/v2/jobs/batch", k.Key, `{"mode":"upsert","jobs":[`+strings.Join(rows, ",")+`]}`, &op); st != 202 {
		t.Fatalf("batch: %d", st)
	}
	for n := 1; op.Status != "done"; n++ {
		if n > 600 {
			t.Fatal("the batch is not done in 60 s")
		}
		if n <= 3 {
			single(n) // while the batch is applied
		}
		time.Sleep(100 * time.Millisecond)
		if st := call(t, "GET", gw+op.URL, k.Key, "", &op); st != 200 {
			t.Fatalf("operation: %d", st)
		}
	}
	single(4)
	var created []int64
	for i, r := range op.Results {
		if r.Action != "created" || r.JobID == nil {
			t.Fatalf("row %d: %+v", i, r)
		}
		created = append(created, *r.JobID)
	}
	// Ten of them changed: job.updated after their job.created.
	var upd struct {
		Counts map[string]int `json:"counts"`
	}
	changed := make([]string, 10)
	for i := range changed {
		changed[i] = job(i, "Batch Night Host")
	}
	if st := call(t, "POST", gw+"/v2/jobs/batch", k.Key, `{"mode":"upsert","jobs":[`+strings.Join(changed, ",")+`]}`, &upd); st != 200 || upd.Counts["updated"] != 10 {
		t.Fatalf("update: %d %v", st, upd.Counts)
	}
	all := append(append([]int64{}, created...), singles...)
	complete := func() bool {
		types, _ := rcv.byJob()
		for _, id := range all {
			if len(types[id]) == 0 {
				return false
			}
		}
		for _, id := range created[:10] {
			if len(types[id]) < 2 {
				return false
			}
		}
		return true
	}
	wait(t, 90*time.Second, complete)
	types, versions := rcv.byJob()
	for i, id := range all {
		want := "job.created"
		if i < 10 {
			want = "job.created job.updated"
		}
		if got := strings.Join(types[id], " "); got != want {
			t.Errorf("job %d: %q, want %q", id, got, want)
		}
		for j := 1; j < len(versions[id]); j++ {
			if versions[id][j] < versions[id][j-1] {
				t.Errorf("job %d: versions %v", id, versions[id])
			}
		}
	}
}
