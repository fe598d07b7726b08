package webhook

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The earlier delivery design, kept only to drain the runs still open at
// the upgrade to the pump (issue 45): one DeliveryWorkflow per (endpoint,
// job), one Attempt activity per try. Its workflow code is unchanged, so
// that those runs replay; its activities no longer deliver. Next finds
// nothing and Attempt reports a delivery over without sending it, so an
// open run ends within idle of its next task, and the deliveries it held
// stay pending in webhook_deliveries, where the endpoint's pump takes them
// in their order (the dispatch wakes endpoints left with due deliveries
// and no pump every strandedEvery). Nothing starts new runs. Upgrade path:
// deploy this worker (old workers still running finish the request they
// have in flight, at most one per run: a receiver may see it twice, with
// the same webhook-id); once `temporal workflow count --query
// "WorkflowType='DeliveryWorkflow' AND ExecutionStatus='Running'"` is 0,
// the next release deletes this file. TestLegacyRunsDrainToThePump.

// SignalDelivery carries a delivery id to its workflow.
const SignalDelivery = "delivery"

// perRun bounds the deliveries of one run before it continues as new.
const perRun = 50

// Input names a run's (endpoint, job).
type Input struct {
	EndpointID, JobID int64
}

// AttemptInput is one attempt; NextIn is the wait before the next one (0:
// this is the last).
type AttemptInput struct {
	DeliveryID int64
	NextIn     time.Duration
}

// Outcome says whether the delivery is over (delivered, or given up).
type Outcome struct{ Done bool }

// Next is the (endpoint, job)'s oldest delivery still pending.
type Next struct {
	DeliveryID int64
	Found      bool
}

// DeliveryWorkflow delivers the (endpoint, job)'s pending deliveries
// oldest first. A signal only wakes it: the order is the deliveries' ids
// (assigned in the events' commit order), read from the database, so a
// signal that arrives late or twice (the relay retries at least once)
// changes nothing.
func DeliveryWorkflow(ctx workflow.Context, in Input) error {
	ch := workflow.GetSignalChannel(ctx, SignalDelivery)
	drain := func() (woken bool) {
		var id int64
		for ch.ReceiveAsync(&id) {
			woken = true
		}
		return woken
	}
	actx := workflow.WithActivityOptions(ctx, activityOptions)
	for done := 0; ; {
		drain()
		var next Next
		if err := workflow.ExecuteActivity(actx, (*Activities).Next, in).Get(ctx, &next); err != nil {
			return err
		}
		if !next.Found {
			more, err := workflow.AwaitWithTimeout(ctx, idle, func() bool { return ch.Len() > 0 })
			if err != nil {
				return err
			}
			if !more && !drain() {
				return nil
			}
			continue
		}
		if err := deliver(ctx, next.DeliveryID); err != nil {
			return err
		}
		if done++; done >= perRun {
			drain()
			return workflow.NewContinueAsNewError(ctx, DeliveryWorkflow, in)
		}
	}
}

// attemptOptions add a heartbeat to activityOptions: a worker killed
// mid-request (its receiver hanging) is noticed after HeartbeatTimeout and
// the attempt retried on another worker, instead of after the whole
// StartToCloseTimeout (TestWebhooksThroughTemporal kills one).
var attemptOptions = func() workflow.ActivityOptions {
	o := activityOptions
	o.HeartbeatTimeout = HeartbeatTimeout
	return o
}()

var activityOptions = workflow.ActivityOptions{
	// the request's own deadline, and the database around it
	StartToCloseTimeout: 30 * time.Second,
	// Retries of the activity itself are for its infrastructure (the
	// database away, a worker killed mid-attempt); the receiver's failures
	// are deliver's, with their own back-off and log.
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
}

// deliver tries one delivery until it is over or RetryFor has passed.
func deliver(ctx workflow.Context, id int64) error {
	actx := workflow.WithActivityOptions(ctx, attemptOptions)
	start := workflow.Now(ctx)
	for attempt := 0; ; attempt++ {
		var jitter float64
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return randFloat() }).Get(&jitter); err != nil {
			return err
		}
		wait := Backoff(attempt, jitter)
		if workflow.Now(ctx).Sub(start)+wait > RetryFor {
			wait = 0
		}
		var out Outcome
		if err := workflow.ExecuteActivity(actx, (*Activities).Attempt, AttemptInput{DeliveryID: id, NextIn: wait}).Get(ctx, &out); err != nil {
			return err
		}
		if out.Done || wait == 0 {
			return nil
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Next (the earlier design's) finds nothing: the pump delivers.
func (a *Activities) Next(context.Context, Input) (Next, error) { return Next{}, nil }

// Attempt (the earlier design's) sends nothing and reports the delivery
// over: it stays pending for the pump.
func (a *Activities) Attempt(context.Context, AttemptInput) (Outcome, error) {
	return Outcome{Done: true}, nil
}
