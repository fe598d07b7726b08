package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
)

// SignalWake wakes an endpoint's workflow: it has deliveries to take.
const SignalWake = "wake"

// The pump's pace.
const (
	// PumpConcurrency bounds an endpoint's requests in flight (one per job).
	PumpConcurrency = 16
	// pumpIdle: a pump with nothing to do for this long releases its lease
	// and returns (the workflow waits for a wake-up or the next retry).
	pumpIdle = 5 * time.Second
	// pumpFor bounds one pump run; the workflow starts the next at once.
	pumpFor = 5 * time.Minute
	// pumpLease is how long the dispatch trusts a pump to poll (renewed
	// every pumpLease/3): past it, a dead pump's endpoint is woken again.
	pumpLease = 30 * time.Second
	// The poll of the due deliveries: pollMin after one that found some,
	// doubling to pollMax while none are found.
	pollMin = 100 * time.Millisecond
	pollMax = 250 * time.Millisecond
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

func (a *Activities) warn(msg string, err error) {
	if a.Log != nil {
		a.Log.Warn(msg, "error", err)
	}
}

// sent is one request's outcome.
type sent struct {
	d   hookbus.Delivery
	at  Attempt
	ans answer
}

// Pump delivers the endpoint's due deliveries until it has been idle for
// pumpIdle or has run for pumpFor: the oldest pending delivery of each job
// (a job's next one waits until it is over, which keeps the order per
// job), up to PumpConcurrency jobs at once, each request's outcome
// recorded in the delivery log, failures retried after Backoff through
// next_try_at. One endpoint's pump never waits for another's.
func (a *Activities) Pump(ctx context.Context, in EndpointInput) (Pumped, error) {
	defer heartbeat(ctx)()
	owner := pumpOwner(ctx)
	if err := a.Store.Lease(ctx, in.EndpointID, owner, pumpLease, true); err != nil {
		return Pumped{}, err
	}
	started := a.now()
	lastWork := started
	leased := started
	busy := map[int64]bool{} // jobs with a request in flight
	done := make(chan sent, PumpConcurrency)
	var finished []sent
	poll := pollMin
	// over records what was answered before the pump stops on an error
	// (its context cancelled: Temporal presumed it dead, or the worker
	// stops), so that a delivery answered 2xx is not sent again.
	over := func(err error) (Pumped, error) {
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for len(finished) < len(busy) {
			select {
			case r := <-done:
				finished = append(finished, r)
			case <-octx.Done():
				return Pumped{}, err
			}
		}
		if len(finished) > 0 {
			if serr := a.settle(octx, in.EndpointID, finished); serr != nil {
				a.warn("webhook pump: recording the last outcomes", serr)
			}
		}
		if errors.Is(err, hookdb.ErrLeaseLost) {
			return Pumped{More: true}, nil
		}
		return Pumped{}, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return over(err)
		}
	collect:
		for {
			select {
			case r := <-done:
				finished = append(finished, r)
			default:
				break collect
			}
		}
		if len(finished) > 0 {
			if err := a.settle(ctx, in.EndpointID, finished); err != nil {
				return over(err)
			}
			for _, r := range finished {
				delete(busy, r.d.JobID)
			}
			finished = finished[:0]
		}
		if a.now().Sub(leased) > pumpLease/3 {
			if err := a.Store.Lease(ctx, in.EndpointID, owner, pumpLease, false); err != nil {
				return over(err)
			}
			leased = a.now()
		}
		took := 0
		if free := PumpConcurrency - len(busy); free > 0 {
			jobs := make([]int64, 0, len(busy))
			for j := range busy {
				jobs = append(jobs, j)
			}
			due, err := a.Store.TakeDue(ctx, in.EndpointID, owner, jobs, free)
			switch {
			case errors.Is(err, hookbus.ErrNotFound): // deleted, its deliveries with it
				return Pumped{Gone: true}, nil
			case err != nil:
				return over(err)
			case !due.Endpoint.Enabled:
				return a.stop(ctx, due.Endpoint, owner, busy, done)
			}
			bodies, err := a.bodies(ctx, due.Endpoint, due.Deliveries)
			if err != nil {
				return over(err)
			}
			ss := secrets(due.Secret, due.OldSecret)
			for i, d := range due.Deliveries {
				busy[d.JobID] = true
				go func() {
					at, ans := a.send(ctx, due.Endpoint.URL, d.MsgID, bodies[i], ss)
					done <- sent{d: d, at: at, ans: ans}
				}()
			}
			took = len(due.Deliveries)
		}
		now := a.now()
		switch {
		case took > 0 || len(busy) > 0:
			lastWork = now
		case now.Sub(lastWork) >= cmp.Or(a.idle, pumpIdle) || now.Sub(started) >= pumpFor:
			due, next, err := a.Store.Release(ctx, in.EndpointID, owner)
			if err != nil {
				return Pumped{}, err
			}
			if !due {
				return Pumped{NextDue: next}, nil
			}
			// A delivery came after all: lease again and go on.
			if err := a.Store.Lease(ctx, in.EndpointID, owner, pumpLease, false); err != nil {
				return over(err)
			}
			leased, lastWork = now, now
			continue
		}
		if now.Sub(started) >= pumpFor && len(busy) == 0 {
			return Pumped{More: true}, nil
		}
		if took > 0 {
			poll = pollMin
		} else {
			poll = min(2*poll, pollMax)
		}
		// Wait for the next poll, or for a free slot when every one is
		// taken; the outcomes that come meanwhile are recorded together.
		timer := time.NewTimer(poll)
		if len(busy) >= PumpConcurrency {
			select {
			case r := <-done:
				finished = append(finished, r)
			case <-ctx.Done():
			}
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

// stop ends the pump of a disabled endpoint: the requests in flight are
// recorded, the rest of its pending deliveries skipped.
func (a *Activities) stop(ctx context.Context, ep hookbus.Endpoint, owner string, busy map[int64]bool, done chan sent) (Pumped, error) {
	var rs []sent
	for range busy {
		select {
		case r := <-done:
			rs = append(rs, r)
		case <-ctx.Done():
			return Pumped{}, ctx.Err()
		}
	}
	if len(rs) > 0 {
		if err := a.settle(ctx, ep.ID, rs); err != nil {
			return Pumped{}, err
		}
	}
	why := "the endpoint is disabled"
	if ep.DisabledReason != nil {
		why += ": " + *ep.DisabledReason
	}
	if err := a.Store.SkipPending(ctx, ep.ID, why); err != nil {
		return Pumped{}, err
	}
	_, _, err := a.Store.Release(ctx, ep.ID, owner)
	return Pumped{Gone: true}, err
}

// settle records outcomes in one statement: a 2xx succeeded; a failure is
// retried after Backoff of its attempts so far, or failed when that would
// pass RetryFor since it was queued, or when the endpoint has now failed
// for DisableAfter (then disabled, its owner mailed); a 410 disables the
// endpoint at once.
func (a *Activities) settle(ctx context.Context, endpointID int64, rs []sent) error {
	now := a.now()
	var ok, gone bool
	var lastErr string
	for _, r := range rs {
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
	if ok {
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
	out := make([]hookdb.Attempt, 0, len(rs))
	for _, r := range rs {
		at, status, next := r.at, "failed", time.Duration(0)
		switch {
		case r.ans == answerOK:
			status = "succeeded"
		case r.ans == answerGone || tooLong:
		default:
			next = Backoff(r.d.Attempts, randFloat())
			if now.Sub(r.d.CreatedAt)+next > RetryFor {
				at.Error += fmt.Sprintf("; given up after %d hours of retries", int(RetryFor.Hours()))
				next = 0
			} else {
				status = "pending"
			}
		}
		rec := hookdb.Attempt{DeliveryID: r.d.ID, Status: status, ResponseStatus: at.Status, ResponseBody: at.Body, LatencyMS: at.LatencyMS}
		if at.Error != "" {
			e := truncate(at.Error, 1000)
			rec.Error = &e
		}
		if next > 0 {
			u := now.Add(next).Unix()
			rec.NextTryAt = &u
		}
		out = append(out, rec)
	}
	if err := a.Store.RecordAll(ctx, out); err != nil {
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
