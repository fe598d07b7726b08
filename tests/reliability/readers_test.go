package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A reader of the event log survives PostgreSQL crashing under it: a
// webhook endpoint (a position of its own, issue 45) receives the
// job.created of every job created before the crash and after the
// restart, each answered once: its position moved with what it had sent,
// and what it had not sent waited past it.
func TestWebhookReaderSurvivesPostgresRestart(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	ctx := context.Background()
	var mu sync.Mutex
	answered := map[string]int{} // webhook-id: 2xx answers
	jobs := map[int64]bool{}     // the jobs heard of
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m struct {
			Data struct {
				IDJob int64 `json:"id_job"`
			} `json:"data"`
		}
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		answered[r.Header.Get("webhook-id")]++
		jobs[m.Data.IDJob] = true
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	key := newKey(t, p.sys, "-space", "1", "-scopes", "read,jobs:write,webhooks:manage")
	if r := do(t, "POST", gw+"/v2/webhooks", fmt.Sprintf(`{"url":%q,"events":["job.created"]}`, srv.URL+"/readers"), "X-API-Key", key); r.status != 201 {
		t.Fatalf("register: %s", r)
	}
	var created []int64
	create := func(phase string) bool {
		r := do(t, "POST", gw+"/v2/jobs", jobBody("Reader "+phase+" "+randomSuffix()), "X-API-Key", key)
		if r.status != 201 {
			return false
		}
		var c createResult
		r.into(t, &c)
		created = append(created, c.JobID)
		return true
	}
	for range 5 {
		if !create("before") {
			t.Fatal("a create before the crash failed")
		}
	}
	if err := p.pg.Stop(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := p.pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; {
		eventually(t, 60*time.Second, "creates after the restart", func() bool { return create("after") })
		i++
	}
	eventually(t, 120*time.Second, "every job's job.created delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range created {
			if !jobs[id] {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // a duplicate would come within a round
	mu.Lock()
	defer mu.Unlock()
	for id, n := range answered {
		if n != 1 {
			t.Errorf("%s answered %d times", id, n)
		}
	}
	if len(answered) != len(created) {
		t.Errorf("%d messages for %d jobs", len(answered), len(created))
	}
}
