// Package webhook delivers job events to webhook endpoints through
// Temporal. One workflow per endpoint (EndpointWorkflow) supervises one
// long-running, heartbeating activity, the pump (Activities.Pump), that
// takes the endpoint's due deliveries from the database: the oldest
// pending delivery of each job, so a receiver never hears of a job's
// change before the one that preceded it, up to PumpConcurrency jobs at
// once, their outcomes recorded in the delivery log in one statement. A
// failure is retried after Backoff (exponential, with jitter) through the
// delivery's next_try_at for RetryFor, its job's later deliveries waiting
// behind it; a 410 disables the endpoint at once, DisableAfter of failures
// too (its owner mailed). The workflow sleeps on a Temporal timer until the
// next retry is due or the dispatch wakes it, and ends when nothing is
// pending; a worker killed mid-delivery loses its pump's heartbeat and
// Temporal runs the pump again elsewhere, which takes up what was left
// pending. Each endpoint has its own pump: a slow or failing endpoint
// delays only its own messages. While a pump runs it holds a lease
// (webhook_endpoints.pump_until) and polls for new deliveries itself, so
// the dispatch wakes (signals) an endpoint only when its pump is not
// running; Temporal does a few tasks per endpoint and minute instead of
// four or five per delivery (docs/benchmarks.md, "Webhooks (issue 35)").
//
// DeliveryWorkflow, the earlier design's workflow per (endpoint, job)
// with one activity per attempt, stays registered for its runs still open
// at an upgrade; nothing starts new ones.
package webhook

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskQueue is the webhook workflows' queue, apart from the expiry's so
// that a burst of deliveries never delays a timer.
const TaskQueue = "jobs-webhooks"

// SignalDelivery carries a delivery id to its workflow.
const SignalDelivery = "delivery"

// The retry rules.
const (
	MinBackoff   = 5 * time.Second
	MaxBackoff   = 2 * time.Hour
	RetryFor     = 72 * time.Hour
	DisableAfter = 5 * 24 * time.Hour
	// idle is how long a workflow with nothing to deliver waits for more
	// before it ends (the next delivery starts it again).
	idle = time.Minute
	// perRun bounds the deliveries of one run before it continues as new,
	// which keeps its history short.
	perRun = 50
)

// WorkflowID names the workflow of an endpoint's deliveries about a job
// (job 0: its pings), so that signal-with-start finds the running one.
func WorkflowID(endpointID, jobID int64) string {
	return fmt.Sprintf("webhook-%d-job-%d", endpointID, jobID)
}

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

// HeartbeatTimeout is how long an attempt may go without a heartbeat
// (Attempt sends one every HeartbeatTimeout/4).
const HeartbeatTimeout = 8 * time.Second

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

// Backoff is the wait after the attempt-th failure: MinBackoff doubled per
// earlier failure, capped at MaxBackoff, drawn from [wait/2, wait] by
// jitter in [0, 1) so that deliveries that failed together do not retry in
// step.
func Backoff(attempt int, jitter float64) time.Duration {
	wait := MaxBackoff
	if attempt < 20 {
		if d := MinBackoff << attempt; d < MaxBackoff {
			wait = d
		}
	}
	return wait/2 + time.Duration(jitter*float64(wait/2))
}
