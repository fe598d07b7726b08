package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// A pump stopped while a slow receiver holds a request (its worker
// killed: the activity's context ends) has moved the endpoint's position
// past what was answered before it: the next pump sends again only the
// request that was in flight, then the rest, in order; nothing twice that
// was answered, nothing lost.
func TestPumpKilledMidRoundResendsOnlyWhatWasInFlight(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var answered, all []string
	hold := make(chan struct{})
	held := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		all = append(all, id)
		n := len(all)
		mu.Unlock()
		if n == 3 { // the third event: held until the sender goes away
			held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		mu.Lock()
		answered = append(answered, id)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	acts, ep, job := fixture(t, 7060, "Killed Host", srv.URL)
	queue(t, ep, job) // past the fixture's own event
	ids := make([]string, 4)
	for i := range ids {
		if err := pool.QueryRow(context.Background(), `INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
			VALUES ($1, 'job.created', $2, 'active', 'active', 7060, 1) RETURNING id::text`, job, i+2).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, kill := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_, _ = acts.Pump(ctx, EndpointInput{EndpointID: ep.ID})
	}()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the third event never came")
	}
	// Let a checkpoint pass, then kill.
	time.Sleep(2 * checkpointEvery)
	kill()
	<-stopped
	// The lease of the killed pump lapses (Temporal runs the pump again).
	if _, err := pool.Exec(context.Background(), `UPDATE event_readers SET lease_until = NULL WHERE reader = $1`, hookbus.ReaderID(ep.ID)); err != nil {
		t.Fatal(err)
	}
	close(hold)
	pumpNow(t, acts, ep)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(answered, ids) {
		t.Fatalf("answered %v, want %v once each in order", answered, ids)
	}
	if want := []string{ids[0], ids[1], ids[2], ids[2], ids[3]}; !slices.Equal(all, want) {
		t.Fatalf("requests %v, want %v (only the one in flight twice)", all, want)
	}
}

// An endpoint that fails for a while pauses: its retries probe it and it
// reads no new events meanwhile (they stay past its position, no row);
// once a retry succeeds it catches up from its position, every job's
// events in order, none lost, none answered twice.
func TestFailingEndpointPausesThenCatchesUpInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var answered []string
	down := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if down {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		answered = append(answered, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	acts, ep, job := fixture(t, 7061, "Paused Host", srv.URL)
	_, _, job2 := fixture(t, 7061, "Paused Host Two", srv.URL+"/two")
	queue(t, ep, job2) // past both fixtures' own events
	event := func(job int64, v int) string {
		var id string
		if err := pool.QueryRow(ctx, `INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
			VALUES ($1, 'job.created', $2, 'active', 'active', 7061, 1) RETURNING id::text`, job, v).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	want := map[int64][]string{job: {event(job, 2)}, job2: {event(job2, 2)}}
	// Down: the first round's events fail and become retry rows; the
	// endpoint is paused, so the events that follow get no row.
	pumpNow(t, acts, ep)
	want[job] = append(want[job], event(job, 3), event(job, 4))
	want[job2] = append(want[job2], event(job2, 3))
	pumpNow(t, acts, ep)
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("%d rows while paused (want the 2 failures only): %v", rows, err)
	}
	// Up again: the retries go when due, then the rest from the position.
	mu.Lock()
	down = false
	mu.Unlock()
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET next_try_at = now() WHERE endpoint_id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	pumpNow(t, acts, ep)
	pumpNow(t, acts, ep)
	mu.Lock()
	defer mu.Unlock()
	got := map[int64][]string{}
	seen := map[string]bool{}
	for _, id := range answered {
		if seen[id] {
			t.Fatalf("%s answered twice: %v", id, answered)
		}
		seen[id] = true
		for j, ids := range want {
			if slices.Contains(ids, id) {
				got[j] = append(got[j], id)
			}
		}
	}
	for j, ids := range want {
		if !slices.Equal(got[j], ids) {
			t.Fatalf("job %d: answered %v, want %v in order", j, got[j], ids)
		}
	}
}
