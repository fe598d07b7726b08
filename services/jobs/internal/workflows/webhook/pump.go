package webhook

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// SignalWake wakes an endpoint's workflow: it has deliveries to take.
const SignalWake = "wake"

// The pump's pace.
const (
	// PumpConcurrency bounds an endpoint's requests in flight (one per job).
	PumpConcurrency = 16
	// eventBatch bounds the events a pump round reads past the position.
	eventBatch = 200
	// pumpIdle: a pump with nothing to do for this long releases its lease
	// and returns (the workflow waits for a wake-up or the next retry).
	pumpIdle = 5 * time.Second
	// pumpFor bounds one pump run; the workflow starts the next at once.
	pumpFor = 5 * time.Minute
	// pumpLease is how long the dispatch trusts a pump to poll (renewed
	// every pumpLease/3): past it, a dead pump's endpoint is woken again
	// (the endpoint's reader lease, eventbus).
	pumpLease = 30 * time.Second
	// The poll of the events and due deliveries: pollMin after a round
	// that found some, doubling to pollMax while none are found. A round
	// costs three statements however many events it sends, so a longer
	// poll is less CPU a delivery and more latency (docs/benchmarks.md).
	pollMin = 200 * time.Millisecond
	pollMax = 400 * time.Millisecond
	// perRunPumps bounds the pump runs of one workflow run before it
	// continues as new, which keeps its history short.
	perRunPumps = 50
)

// PumpHeartbeatTimeout is how long a pump may go without a heartbeat
// before Temporal runs it again elsewhere. The SDK sends heartbeats at most
// every 0.8 of it, so 8 s (an attempt's) left 1.6 s for the call: on a
// loaded machine (bench-webhooks at load average 24 on 2 cores) live pumps
// were presumed dead and their deliveries sent twice.
const PumpHeartbeatTimeout = 15 * time.Second

// EndpointWorkflowID names the workflow of an endpoint's deliveries.
func EndpointWorkflowID(endpointID int64) string { return fmt.Sprintf("webhook-%d", endpointID) }

// EndpointInput names an endpoint.
type EndpointInput struct{ EndpointID int64 }

// Pumped is how a pump run ended.
type Pumped struct {
	Gone    bool       // the endpoint was deleted or disabled: the workflow ends
	More    bool       // stopped at pumpFor with work left: run again at once
	NextDue *time.Time // the earliest retry waiting (nil: nothing pending)
}

// StartEndpoint wakes the endpoint's workflow, starting it when none runs.
func StartEndpoint(ctx context.Context, c client.Client, endpointID int64) error {
	return temporalx.SignalWithStart(ctx, c, EndpointWorkflowID(endpointID), TaskQueue, SignalWake, endpointID,
		EndpointWorkflow, EndpointInput{EndpointID: endpointID})
}

// pumpOptions: the pump heartbeats (a killed worker's pump is retried on
// another after HeartbeatTimeout, and takes up the deliveries the dead
// one left pending); its infrastructure failures are retried as an
// attempt's are.
var pumpOptions = workflow.ActivityOptions{
	StartToCloseTimeout: pumpFor + time.Minute,
	HeartbeatTimeout:    PumpHeartbeatTimeout,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
}

// EndpointWorkflow supervises the endpoint's pump: it runs it while there
// is work, sleeps until the next retry is due or a wake-up comes, and ends
// after idle with nothing pending (the next delivery starts it again).
func EndpointWorkflow(ctx workflow.Context, in EndpointInput) error {
	ch := workflow.GetSignalChannel(ctx, SignalWake)
	drain := func() (woken bool) {
		var id int64
		for ch.ReceiveAsync(&id) {
			woken = true
		}
		return woken
	}
	actx := workflow.WithActivityOptions(ctx, pumpOptions)
	for runs := 0; runs < perRunPumps; runs++ {
		drain()
		var out Pumped
		if err := workflow.ExecuteActivity(actx, (*Activities).Pump, in).Get(ctx, &out); err != nil {
			return err
		}
		if out.Gone {
			return nil
		}
		if out.More || ch.Len() > 0 {
			continue
		}
		wait := idle
		if out.NextDue != nil {
			wait = max(out.NextDue.Sub(workflow.Now(ctx)), time.Second)
		}
		woken, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return ch.Len() > 0 })
		if err != nil {
			return err
		}
		if !woken && out.NextDue == nil && !drain() {
			return nil
		}
	}
	drain()
	return workflow.NewContinueAsNewError(ctx, EndpointWorkflow, in)
}

// pumpOwner names this run of the pump in the endpoint's lease: the
// activity's attempt, or a random name outside Temporal (tests).
func pumpOwner(ctx context.Context) string {
	if activity.IsActivity(ctx) {
		i := activity.GetInfo(ctx)
		return fmt.Sprintf("%s/%s/%d", i.WorkflowExecution.RunID, i.ActivityID, i.Attempt)
	}
	return fmt.Sprintf("local-%x", rand.Uint64()) //nolint:gosec // G404: a name, not a secret
}

// sent is one request's outcome: of a delivery row (d.ID > 0) or of an
// event read past the position.
type sent struct {
	d   hookbus.Delivery
	ev  jobbus.JobEvent
	at  Attempt
	ans answer
}

// Pump delivers the endpoint's events until it has been idle for pumpIdle
// or has run for pumpFor. The endpoint is a reader of the event log
// (eventbus): the pump claims its lease (the fence: a pump presumed dead
// and replaced stops at its next write), and each round reads the events
// past its position and the due retries, sends them (a job's events one
// after the other, which keeps the order per job; up to PumpConcurrency
// jobs at once), then in one statement moves the position past the round
// and writes a delivery row only for what failed (retried after Backoff)
// and the later events of its job (queued behind it). A delivered event
// leaves no row: the position says it was sent. While the endpoint fails
// and has retries waiting it reads no new events (the retries probe it),
// and catches up from its position, in order, once one succeeds. One
// endpoint's pump never waits for another's.
func (a *Activities) Pump(ctx context.Context, in EndpointInput) (Pumped, error) {
	defer heartbeat(ctx)()
	owner := pumpOwner(ctx)
	reader := hookbus.ReaderID(in.EndpointID)
	l, st, err := a.Readers.Claim(ctx, reader, owner, pumpLease, true)
	if err != nil {
		return Pumped{}, err
	}
	pos := st.Position
	started := a.now()
	lastWork, leased := started, started
	poll := pollMin
	for {
		if err := ctx.Err(); err != nil {
			return Pumped{}, err
		}
		if a.now().Sub(leased) > pumpLease/3 {
			if err := a.Readers.Renew(ctx, l, pumpLease); err != nil {
				return fencedOut(err)
			}
			leased = a.now()
		}
		due, err := a.Store.TakeDue(ctx, in.EndpointID, l, nil, PumpConcurrency)
		switch {
		case errors.Is(err, hookbus.ErrNotFound): // deleted, its deliveries with it
			return Pumped{Gone: true}, nil
		case err != nil:
			return fencedOut(err)
		case !due.Endpoint.Enabled:
			return a.stop(ctx, due.Endpoint, l)
		}
		ep := due.Endpoint
		var evs []jobbus.JobEvent
		next := pos
		if paused := ep.FailingSince != nil && due.Pending; !paused {
			evs, next, err = a.Readers.Read(ctx, pos, eventbus.Filter{Types: ep.Events,
				Audience: &jobbus.Audience{SpaceID: ep.SpaceID, KeyID: ep.KeyID}, Since: ep.CreatedAt}, eventBatch)
			if err != nil {
				return Pumped{}, err
			}
		}
		if len(due.Deliveries) > 0 || len(evs) > 0 || next.XID != pos.XID || next.Seq != pos.Seq {
			if err := a.round(ctx, l, due, evs, pos, next); err != nil {
				return fencedOut(err)
			}
			pos = next
		}
		now := a.now()
		switch {
		case len(due.Deliveries) > 0 || len(evs) > 0:
			lastWork, poll = now, pollMin
			if len(evs) == eventBatch {
				continue // a backlog: the next round at once
			}
		case now.Sub(lastWork) >= cmp.Or(a.idle, pumpIdle) || now.Sub(started) >= pumpFor:
			if err := a.Store.ReleasePump(ctx, l); err != nil {
				return Pumped{}, err
			}
			work, nextDue, err := a.Store.Work(ctx, in.EndpointID)
			if err != nil {
				return Pumped{}, err
			}
			if !work {
				return Pumped{NextDue: nextDue}, nil
			}
			if now.Sub(started) >= pumpFor {
				return Pumped{More: true}, nil
			}
			// An event came after all: claim the reader again and go on.
			if l, st, err = a.Readers.Claim(ctx, reader, owner, pumpLease, true); err != nil {
				return Pumped{}, err
			}
			pos, leased, lastWork = st.Position, now, now
			continue
		default:
			poll = min(2*poll, pollMax)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
		}
	}
}

// fencedOut ends a pump whose reader another pump claimed (Temporal ran the
// pump again, presuming this one dead): the other goes on.
func fencedOut(err error) (Pumped, error) {
	if errors.Is(err, eventbus.ErrFenced) {
		return Pumped{More: true}, nil
	}
	return Pumped{}, err
}

// round sends a round's due retries and new events and records it: the
// retries' outcomes, then the position moved to next with the rows of what
// was not delivered.
func (a *Activities) round(ctx context.Context, l eventbus.Lease, due hookbus.Due, evs []jobbus.JobEvent, pos, next jobbus.Cursor) error {
	ep := due.Endpoint
	// A job with a pending delivery sends none of its new events: they
	// queue behind it.
	blocked := map[int64]bool{}
	for _, d := range due.Deliveries {
		blocked[d.JobID] = true
	}
	if due.Pending && len(evs) > 0 {
		ids := make([]int64, 0, len(evs))
		for _, e := range evs {
			ids = append(ids, e.JobID)
		}
		pend, err := a.Store.PendingJobs(ctx, ep.ID, ids)
		if err != nil {
			return err
		}
		for j := range pend {
			blocked[j] = true
		}
	}
	var queued []hookbus.Queued
	perJob := map[int64][]jobbus.JobEvent{}
	var order []int64
	for _, e := range evs {
		if blocked[e.JobID] {
			queued = append(queued, hookbus.Queued{Event: e})
			continue
		}
		if _, ok := perJob[e.JobID]; !ok {
			order = append(order, e.JobID)
		}
		perJob[e.JobID] = append(perJob[e.JobID], e)
	}
	// Bodies: the retries' and the new events', each event rendered once.
	retryBodies, err := a.bodies(ctx, ep, due.Deliveries)
	if err != nil {
		return err
	}
	var sendable []jobbus.JobEvent
	for _, j := range order {
		sendable = append(sendable, perJob[j]...)
	}
	data, err := a.render(ctx, ep, sendable)
	if err != nil {
		return err
	}
	bodyOf := make(map[string][]byte, len(sendable))
	for i, e := range sendable {
		b, err := messageBody(e.ID, e.Type, e.OccurredAt, data[i])
		if err != nil {
			return err
		}
		bodyOf[e.ID] = b
	}
	ss := secrets(due.Secret, due.OldSecret)
	// Each event of the round, in the log's order, is over once answered,
	// queued, or left behind a failure of its job.
	idx := make(map[string]int, len(evs))
	for i, e := range evs {
		idx[e.ID] = i
	}
	states := make([]evState, len(evs))
	for _, q := range queued {
		states[idx[q.Event.ID]] = evState{over: true}
	}
	var mu sync.Mutex
	var retried []sent
	sem := make(chan struct{}, PumpConcurrency)
	var wg sync.WaitGroup
	for i, d := range due.Deliveries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			at, ans := a.send(ctx, ep.URL, d.MsgID, retryBodies[i], ss)
			mu.Lock()
			retried = append(retried, sent{d: d, at: at, ans: ans})
			mu.Unlock()
		})
	}
	for _, j := range order {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			es := perJob[j]
			for k, e := range es {
				at, ans := a.send(ctx, ep.URL, e.ID, bodyOf[e.ID], ss)
				mu.Lock()
				states[idx[e.ID]] = evState{over: true, r: &sent{ev: e, at: at, ans: ans}}
				if ans != answerOK {
					for _, rest := range es[k+1:] {
						states[idx[rest.ID]] = evState{over: true}
					}
				}
				mu.Unlock()
				if ans != answerOK {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// While requests are out, the position moves past the prefix of the
	// round that is over every checkpointEvery: a worker killed under a
	// slow receiver sends again only what was in flight.
	written, renewed := 0, a.now()
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			var err error
			if a.now().Sub(renewed) > pumpLease/3 {
				err, renewed = a.Readers.Renew(ctx, l, pumpLease), a.now()
			}
			mu.Lock()
			k := written
			for k < len(states) && states[k].over {
				k++
			}
			rows := a.rows(evs, states, written, k, false)
			mu.Unlock()
			if err == nil && k > written {
				if err = a.Store.Advance(ctx, ep.ID, l, evs[k-1].Cursor, rows); err == nil {
					written = k
				}
			}
			if err != nil {
				<-done
				return err
			}
		}
	}
	return a.settle(ctx, l, ep.ID, ep.FailingSince != nil, retried, evs, states, written, next)
}

// checkpointEvery is how often a round with requests out moves the
// position past what is over.
const checkpointEvery = 500 * time.Millisecond

// evState is how an event of a round is: over once answered (r), or
// queued or left behind a failure of its job (r nil: a row, not tried).
type evState struct {
	over bool
	r    *sent
}

// rows are the delivery rows of evs[from:to]: each failure, and what was
// not tried; a delivered event has none.
func (a *Activities) rows(evs []jobbus.JobEvent, states []evState, from, to int, tooLong bool) []hookbus.Queued {
	var out []hookbus.Queued
	now := a.now()
	for i := from; i < to; i++ {
		switch st := states[i]; {
		case st.r == nil:
			out = append(out, hookbus.Queued{Event: evs[i]})
		case st.r.ans != answerOK:
			rec := a.outcome(*st.r, 0, now, now, tooLong)
			out = append(out, hookbus.Queued{Event: evs[i], Attempt: &rec})
		}
	}
	return out
}

// messageBody is a delivery's body (WebhookMessage).
func messageBody(id, typ string, at time.Time, data []byte) ([]byte, error) {
	return json.Marshal(message{ID: id, Type: typ, Timestamp: at.UTC().Truncate(time.Millisecond), Data: data})
}

// stop ends the pump of a disabled endpoint: the rest of its pending
// deliveries skipped, its reader released.
func (a *Activities) stop(ctx context.Context, ep hookbus.Endpoint, l eventbus.Lease) (Pumped, error) {
	why := "the endpoint is disabled"
	if ep.DisabledReason != nil {
		why += ": " + *ep.DisabledReason
	}
	if err := a.Store.SkipPending(ctx, ep.ID, why); err != nil {
		return Pumped{}, err
	}
	return Pumped{Gone: true}, a.Store.ReleasePump(ctx, l)
}

// settle records a round: a 2xx succeeded (a new event's leaves no row); a
// failure is retried after Backoff of its attempts so far, or failed when
// that would pass RetryFor since it was queued, or when the endpoint has
// now failed for DisableAfter (then disabled, its owner mailed); a 410
// disables the endpoint at once (failing: the endpoint was failing before
// the round, so a success clears its streak). The retries' outcomes go in one
// statement; the position, past evs[written:], with their rows in another
// (fenced).
func (a *Activities) settle(ctx context.Context, l eventbus.Lease, endpointID int64, failing bool, retried []sent,
	evs []jobbus.JobEvent, states []evState, written int, next jobbus.Cursor) error {
	now := a.now()
	var ok, gone bool
	var lastErr string
	all := slices.Clone(retried)
	for _, st := range states {
		if st.r != nil {
			all = append(all, *st.r)
		}
	}
	for _, r := range all {
		switch r.ans {
		case answerOK:
			ok = true
		case answerGone:
			gone = true
		default:
			lastErr = r.at.Error
		}
	}
	var failingSince time.Time
	if ok && failing {
		if err := a.Store.Succeeded(ctx, endpointID); err != nil {
			return err
		}
	} else if lastErr != "" {
		since, err := a.Store.Failed(ctx, endpointID)
		if err != nil {
			return err
		}
		failingSince = time.Unix(since, 0)
	}
	tooLong := !failingSince.IsZero() && now.Sub(failingSince) >= DisableAfter
	if len(retried) > 0 {
		out := make([]hookbus.Attempt, 0, len(retried))
		for _, r := range retried {
			out = append(out, a.outcome(r, r.d.Attempts, r.d.CreatedAt, now, tooLong))
		}
		if err := a.Store.RecordAll(ctx, out); err != nil {
			return err
		}
	}
	if err := a.Store.Advance(ctx, endpointID, l, next, a.rows(evs, states, written, len(evs), tooLong)); err != nil {
		return err
	}
	switch {
	case gone:
		_, err := a.Store.Disable(ctx, endpointID, goneReason(now))
		return err
	case tooLong:
		_, err := a.Store.Disable(ctx, endpointID, fmt.Sprintf("every delivery failed from %s for %d days (last: %s); re-enable it with PATCH {\"enabled\": true}",
			failingSince.UTC().Format(time.RFC3339), int(DisableAfter.Hours()/24), lastErr))
		return err
	}
	return nil
}

// outcome is an attempt as the log keeps it, attempts the delivery's
// earlier ones, created when it was queued.
func (a *Activities) outcome(r sent, attempts int, created, now time.Time, tooLong bool) hookbus.Attempt {
	at, status, wait := r.at, "failed", time.Duration(0)
	switch {
	case r.ans == answerOK:
		status = "succeeded"
	case r.ans == answerGone || tooLong:
	default:
		wait = Backoff(attempts, randFloat())
		if now.Sub(created)+wait > RetryFor {
			at.Error += fmt.Sprintf("; given up after %d hours of retries", int(RetryFor.Hours()))
			wait = 0
		} else {
			status = "pending"
		}
	}
	rec := hookbus.Attempt{DeliveryID: r.d.ID, Status: status, ResponseStatus: at.Status, ResponseBody: at.Body, LatencyMS: at.LatencyMS}
	if at.Error != "" {
		e := truncate(at.Error, 1000)
		rec.Error = &e
	}
	if wait > 0 {
		u := now.Add(wait).Unix()
		rec.NextTryAt = &u
	}
	return rec
}
