package tests

import (
	"context"
	"crypto/rand"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
)

// TestListTotalsMemo: a paginated listing's total is counted once per
// version of what it lists and then read from its memo; every acknowledged
// write shows in the next total; a job that expires with no write at all
// leaves the total at once; concurrent writers and readers never see a total
// that misses a create acknowledged before the read began.
func TestListTotalsMemo(t *testing.T) {
	ctx := context.Background()
	const redisURL = "redis://127.0.0.1:6379/10" // this test's own
	bus, v, store := busWithChanges(t, redisURL)
	rdbFlush(t, redisURL)
	// As the service does at start (service.Spec.Changes).
	if err := v.Ensure(ctx, scopes.Jobs, scopes.JobsBulk); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv := web.New(webtest.Config(), testLog, "jobs")
	jobapp.Routes(srv.App, jobapp.Config{Log: testLog, Bus: bus, Codec: codec, PaginationEnabled: true, Registry: reg, Totals: store})
	srv.Fallback()
	app := srv.App
	const space = 1951 // a Pro space of the fixture: its jobs are active at once
	key := liveKey(951, space)
	run := rand.Text()[:10]
	total := func() int {
		t.Helper()
		r := do(t, app, "GET", "/v2/jobs?per_page=2&q="+url.QueryEscape(run), "", &key)
		if r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		var d struct {
			Total int `json:"total"`
		}
		r.data(t, &d)
		return d.Total
	}
	counted := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE space_id = $1 AND status = 'active'
			AND expiration_date > now() AND title LIKE '%' || $2 || '%'`, space, run).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var ids []int64
	for i := range 3 {
		ids = append(ids, createOn(t, app, key, jobBody("Totals "+run+" "+itoa(int64(i)), 1)).JobID)
	}
	hits, misses := store.TotalCounts()
	if n := total(); n != 3 {
		t.Fatalf("total %d, want 3", n)
	}
	if n := total(); n != 3 {
		t.Fatalf("total again %d, want 3", n)
	}
	if h, m := store.TotalCounts(); h != hits+1 || m != misses+1 {
		t.Fatalf("memo hits %d → %d, misses %d → %d; want one count, then the memo", hits, h, misses, m)
	}
	ids = append(ids, createOn(t, app, key, jobBody("Totals "+run+" 3", 1)).JobID)
	if n := total(); n != 4 {
		t.Fatalf("after a create: total %d, want 4", n)
	}
	if r := do(t, app, "POST", "/v2/jobs/pause", `{"job_id":`+itoa(ids[0])+`}`, &key); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	if n := total(); n != 3 {
		t.Fatalf("after a pause: total %d, want 3", n)
	}

	// A job about to expire: set as an operator's tool would, with its bump,
	// then counted into a memo; it expires later with no write at all.
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = now() + interval '3 seconds' WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := v.Bump(ctx, scopes.JobsListed(space)...); err != nil {
		t.Fatal(err)
	}
	if n := total(); n != 3 {
		t.Fatalf("before the expiry: total %d, want 3", n)
	}
	time.Sleep(3500 * time.Millisecond)
	hits, _ = store.TotalCounts()
	if n, want := total(), counted(); n != 2 || want != 2 {
		t.Fatalf("after the expiry: total %d, counted %d; want 2", n, want)
	}
	if h, _ := store.TotalCounts(); h != hits+1 {
		t.Fatalf("the expiry was not taken off the memo (hits %d → %d)", hits, h)
	}

	// Writers and readers at once.
	var acked atomic.Int64
	acked.Store(int64(counted()))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				createOn(t, app, key, jobBody("Totals "+run+" w"+itoa(int64(w))+" "+itoa(int64(i)), 1))
				acked.Add(1)
				before := acked.Load()
				if n := total(); int64(n) < before {
					t.Errorf("a total of %d after %d acknowledged creates", n, before)
				}
			}
		})
	}
	wg.Wait()
	if n, want := total(), counted(); n != want || n != 22 {
		t.Fatalf("at the end: total %d, counted %d; want 22", n, want)
	}

	// What the service exports says the same.
	hits, misses = store.TotalCounts()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "jobs_list_totals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if got["memo"] != float64(hits) || got["counted"] != float64(misses) || hits == 0 || misses == 0 {
		t.Fatalf("jobs_list_totals_total %v; the store counted %d memo, %d counted", got, hits, misses)
	}
}
