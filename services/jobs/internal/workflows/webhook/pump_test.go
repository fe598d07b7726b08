package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
)

// queue inserts deliveries of job to ep with the message ids ids, in order.
// The endpoint's reader is moved past the job's own events first: the
// rows stand for what an earlier dispatch or round left.
func queue(t *testing.T, ep hookbus.Endpoint, job int64, ids ...string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE event_readers SET (xid, seq) =
		(SELECT xid, seq FROM job_events WHERE job_id = $2 ORDER BY xid DESC, seq DESC LIMIT 1) WHERE reader = $1`,
		hookbus.ReaderID(ep.ID), job); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := pool.Exec(context.Background(), `INSERT INTO webhook_deliveries (endpoint_id, msg_id, type, job_id, version, occurred_at)
			VALUES ($1, $2, 'job.created', $3, 1, now())`, ep.ID, id, job); err != nil {
			t.Fatal(err)
		}
	}
}

// ids are the webhook-ids of the deliveries queue made that r got, in
// order (a test that dispatches may add the fixtures' own job.created).
func (r *receiver) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.got {
		if id := g.header.Get("webhook-id"); !strings.Contains(id, "-") {
			out = append(out, id)
		}
	}
	return out
}

// An endpoint's pump delivers each job's deliveries in order and jobs side
// by side; one endpoint failing keeps its job's next deliveries behind the
// failed one (retried after its back-off) while another endpoint's pump,
// run at the same time, delivers all of its own.
func TestPumpKeepsOrderPerJobWhileAnotherEndpointGoesOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	failing := newReceiver(t, 500, 200)
	fine := newReceiver(t, 200)
	actsA, epA, jobA := fixture(t, 7020, "Pump Failing Host", failing.srv.URL+"/a")
	actsB, epB, jobB := fixture(t, 7021, "Pump Fine Host", fine.srv.URL+"/b")
	_, _, jobB2 := fixture(t, 7021, "Pump Fine Host Two", fine.srv.URL+"/b2")
	actsA.idle, actsB.idle = 300*time.Millisecond, 300*time.Millisecond
	queue(t, epA, jobA, "a1", "a2", "a3")
	queue(t, epB, jobB, "b1", "b2", "b3")
	queue(t, epB, jobB2, "c1", "c2")

	var wg sync.WaitGroup
	var outA, outB Pumped
	var errA, errB error
	wg.Go(func() { outA, errA = actsA.Pump(ctx, EndpointInput{EndpointID: epA.ID}) })
	wg.Go(func() { outB, errB = actsB.Pump(ctx, EndpointInput{EndpointID: epB.ID}) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("pumps: %v %v", errA, errB)
	}
	got := fine.ids()
	var b, c []string
	for _, id := range got {
		if strings.HasPrefix(id, "b") {
			b = append(b, id)
		} else {
			c = append(c, id)
		}
	}
	if !slices.Equal(b, []string{"b1", "b2", "b3"}) || !slices.Equal(c, []string{"c1", "c2"}) || outB.NextDue != nil {
		t.Fatalf("the fine endpoint got %v (%+v)", got, outB)
	}
	// The failing endpoint: a1 failed once and waits for its retry; a2 and
	// a3 wait behind it; the pump said when to come back.
	if ids := failing.ids(); !slices.Equal(ids, []string{"a1"}) {
		t.Fatalf("the failing endpoint got %v", ids)
	}
	var status string
	var attempts int
	var next *time.Time
	if err := pool.QueryRow(ctx, `SELECT status, attempts, next_try_at FROM webhook_deliveries WHERE endpoint_id = $1 AND msg_id = 'a1'`, epA.ID).
		Scan(&status, &attempts, &next); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || attempts != 1 || next == nil || outA.NextDue == nil || !outA.NextDue.Equal(*next) ||
		time.Until(*next) > MinBackoff || time.Until(*next) < -time.Second {
		t.Fatalf("a1: %s after %d attempts, next %v, pump %+v", status, attempts, next, outA)
	}
	// Its retry is due (nobody waits for it): all three go, in order.
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET next_try_at = now() WHERE endpoint_id = $1`, epA.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := actsA.Pump(ctx, EndpointInput{EndpointID: epA.ID}); err != nil || out.NextDue != nil || out.Gone {
		t.Fatalf("second pump: %+v %v", out, err)
	}
	if ids := failing.ids(); !slices.Equal(ids, []string{"a1", "a1", "a2", "a3"}) {
		t.Fatalf("the failing endpoint got %v", ids)
	}
	failing.mu.Lock()
	last := failing.got[len(failing.got)-1].body
	failing.mu.Unlock()
	var log []struct {
		Status   string
		Attempts int
	}
	rows, _ := pool.Query(ctx, `SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1 AND msg_id LIKE 'a_' ORDER BY id`, epA.ID)
	for rows.Next() {
		var l struct {
			Status   string
			Attempts int
		}
		if err := rows.Scan(&l.Status, &l.Attempts); err != nil {
			t.Fatal(err)
		}
		log = append(log, l)
	}
	if len(log) != 3 || log[0].Attempts != 2 || log[0].Status != "succeeded" || log[2].Status != "succeeded" {
		t.Fatalf("log: %+v", log)
	}
	// The body is the job as its owner reads it.
	var msg struct {
		Data struct {
			IDJob int64 `json:"id_job"`
		}
	}
	err := json.Unmarshal(last, &msg)
	if err != nil || msg.Data.IDJob != jobA {
		t.Fatalf("body: %v %+v", err, msg)
	}
	// Idle, the pump released its lease: the dispatch wakes the endpoint again.
	var leased bool
	if err := pool.QueryRow(ctx, `SELECT lease_until IS NOT NULL FROM event_readers WHERE reader = $1`, hookbus.ReaderID(epA.ID)).Scan(&leased); err != nil || leased {
		t.Fatalf("lease kept: %v %v", leased, err)
	}
}

// A 410 disables the endpoint at once; the pump skips the rest of what is
// queued for it and says it is over.
func TestPump410DisablesAndSkipsTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusGone)
	acts, ep, job := fixture(t, 7022, "Pump Gone Host", rcv.srv.URL)
	acts.idle = 300 * time.Millisecond
	queue(t, ep, job, "g1", "g2")
	out, err := acts.Pump(ctx, EndpointInput{EndpointID: ep.ID})
	if err != nil || !out.Gone {
		t.Fatalf("pump: %+v %v", out, err)
	}
	if ids := rcv.ids(); !slices.Equal(ids, []string{"g1"}) {
		t.Fatalf("requests %v", ids)
	}
	e, _ := hookdb.New(pool).Get(ctx, hookbus.Owner{SpaceID: 7022, KeyID: 1}, ep.ID)
	if e.Enabled || e.DisabledReason == nil || !strings.Contains(*e.DisabledReason, "410") {
		t.Fatalf("after a 410: %+v", e)
	}
	var st []string
	rows, _ := pool.Query(ctx, `SELECT status FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`, ep.ID)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		st = append(st, s)
	}
	if !slices.Equal(st, []string{"failed", "skipped"}) {
		t.Fatalf("statuses %v", st)
	}
}

// A failure retried until RetryFor since it was queued is then given up.
func TestPumpGivesUpAfterRetryFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, 500)
	acts, ep, job := fixture(t, 7023, "Pump Old Host", rcv.srv.URL)
	acts.idle = 300 * time.Millisecond
	queue(t, ep, job, "o1")
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET created_at = now() - interval '72 hours' WHERE endpoint_id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := acts.Pump(ctx, EndpointInput{EndpointID: ep.ID}); err != nil || out.NextDue != nil {
		t.Fatalf("pump: %+v %v", out, err)
	}
	var status, last string
	if err := pool.QueryRow(ctx, `SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&status, &last); err != nil ||
		status != "failed" || !strings.Contains(last, "given up") {
		t.Fatalf("%s %q %v", status, last, err)
	}
}

// The endpoint's workflow runs the pump again when a retry falls due or a
// wake-up comes, and ends once idle with nothing pending.
func TestEndpointWorkflowSleepsUntilDueAndWakes(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(EndpointWorkflow)
	env.RegisterActivity(&Activities{})
	var at []time.Time
	env.OnActivity("Pump", mock.Anything, mock.Anything).Return(func(context.Context, EndpointInput) (Pumped, error) {
		at = append(at, env.Now())
		if len(at) == 1 {
			due := env.Now().Add(time.Hour)
			return Pumped{NextDue: &due}, nil
		}
		return Pumped{}, nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalWake, int64(1)) }, time.Hour+30*time.Second)
	env.ExecuteWorkflow(EndpointWorkflow, EndpointInput{EndpointID: 9})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if len(at) != 3 || at[1].Sub(at[0]) < time.Hour || at[1].Sub(at[0]) > time.Hour+time.Second || at[2].Sub(at[0]) < time.Hour+30*time.Second {
		t.Fatalf("pumps at %v", at)
	}
}

// A pump whose lease another pump took (Temporal ran the pump again,
// presuming this one dead) stops at its next poll instead of sending
// beside the new one.
func TestPumpStopsWhenItsLeaseIsTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	acts, ep, _ := fixture(t, 7024, "Pump Fenced Host", rcv.srv.URL)
	acts.idle = time.Minute
	done := make(chan Pumped, 1)
	go func() {
		out, err := acts.Pump(ctx, EndpointInput{EndpointID: ep.ID})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	time.Sleep(300 * time.Millisecond)
	if _, _, err := acts.Readers.Claim(ctx, hookbus.ReaderID(ep.ID), "another pump", pumpLease, true); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if !out.More {
			t.Fatalf("fenced pump: %+v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the fenced pump went on")
	}
}

// The dispatch queues no wake-up for an endpoint whose pump holds its
// reader (the pump reads its events itself) and writes no delivery; an
// event left past the position of an endpoint without a pump is woken by
// WakeStranded.
//
// Not parallel: the dispatch is the server's, and would wake the parallel
// tests' endpoints.
func TestDispatchWakesOnlyEndpointsWithoutAPump(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	acts, ep, job := fixture(t, 7025, "Pump Leased Host", rcv.srv.URL)
	if _, _, err := acts.Readers.Claim(ctx, hookbus.ReaderID(ep.ID), "a running pump", pumpLease, true); err != nil {
		t.Fatal(err)
	}
	relay := &Relay{Store: acts.Store}
	count := func(q string, args ...any) int {
		var n int
		if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dispatchedSQL := `SELECT count(*) FROM job_events e, webhook_dispatch d WHERE e.job_id = $1 AND (e.xid, e.seq) <= (d.xid, d.seq)`
	for deadline := time.Now().Add(20 * time.Second); count(dispatchedSQL, job) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("never dispatched")
		}
		if _, err := relay.DispatchOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(`SELECT count(*) FROM webhook_outbox WHERE endpoint_id = $1`, ep.ID); n != 0 {
		t.Fatalf("%d wake-ups for an endpoint with a running pump", n)
	}
	if n := count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, ep.ID); n != 0 {
		t.Fatalf("the dispatch wrote %d deliveries", n)
	}
	// The pump is gone without releasing (its lease ran out) and the
	// event waits past the position: the sweep wakes the endpoint, once.
	if _, err := pool.Exec(ctx, `UPDATE event_readers SET lease_until = now() - interval '1 minute' WHERE reader = $1`, hookbus.ReaderID(ep.ID)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := acts.Store.WakeStranded(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(`SELECT count(*) FROM webhook_outbox WHERE endpoint_id = $1`, ep.ID); n != 1 {
		t.Fatalf("%d wake-ups for a stranded endpoint", n)
	}
	// Its pump sends the event, and leaves no row for it.
	pumpNow(t, acts, ep)
	if n := count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, ep.ID); n != 0 || len(rcv.got) != 1 {
		t.Fatalf("%d rows, %d requests after a delivery", n, len(rcv.got))
	}
}
