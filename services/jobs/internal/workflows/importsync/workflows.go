// Package importsync polls the import sources through Temporal: one
// workflow per source (SourceWorkflow, "import-source-<id>") runs the poll
// activity when the source is due and sleeps on a Temporal timer until its
// next poll or a wake-up signal. A workflow per source rather than one
// scheduler: each source has its own interval and its own failures (a feed
// that times out for 30 s delays only its own polls, as each webhook
// endpoint has its own pump), a sync or a new source is one
// signal-with-start to that source's workflow and answers within seconds
// instead of at a scheduler's next tick, and a deletion ends just that
// workflow (its poll finds the source gone). The API has no Temporal
// client: its creations, syncs and deletions write a wake-up into
// import_wakes in their own statement, relayed by jobs-worker (Relay, libs/
// outbox), so a wake-up is not lost while Temporal is away; and at its
// start the worker wakes every source (EnsureAll), so a workflow lost with
// a Temporal namespace comes back. The state (validators, next poll) is in
// the database, the workflow holds none: a wake-up that comes twice finds
// the source not due and does nothing.
package importsync

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskQueue is the import polls' queue, apart from the expiry's and the
// webhooks' so that a slow feed never delays them.
const TaskQueue = "jobs-import"

// SignalWake wakes a source's workflow: poll it if it is due (a sync, a
// new source) or end if it is gone (a deletion).
const SignalWake = "wake"

// perRunPolls bounds the polls of one workflow run before it continues as
// new, which keeps its history short.
const perRunPolls = 100

// retryAfter is how long a workflow waits after a poll the activity's
// retries could not run (the database away): the source stays due.
const retryAfter = time.Minute

// SourceWorkflowID names a source's workflow.
func SourceWorkflowID(sourceID int64) string { return fmt.Sprintf("import-source-%d", sourceID) }

// SourceInput names a source.
type SourceInput struct{ SourceID int64 }

// Polled is what a poll activity tells the workflow.
type Polled struct {
	Gone     bool
	NextPoll time.Time
}

// pollOptions: a poll fetches (FetchTimeout) and applies up to
// importbus.MaxPositions rows; our own failures are retried a few times.
var pollOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
}

// SourceWorkflow polls its source whenever it is due or woken, until the
// source is gone.
func SourceWorkflow(ctx workflow.Context, in SourceInput) error {
	ch := workflow.GetSignalChannel(ctx, SignalWake)
	drain := func() {
		var v int64
		for ch.ReceiveAsync(&v) {
		}
	}
	actx := workflow.WithActivityOptions(ctx, pollOptions)
	for runs := 0; runs < perRunPolls; runs++ {
		drain()
		var out Polled
		wait := retryAfter
		if err := workflow.ExecuteActivity(actx, (*Activities).Poll, in).Get(ctx, &out); err != nil {
			workflow.GetLogger(ctx).Warn("import poll failed; retried", "source", in.SourceID, "error", err)
		} else if out.Gone {
			return nil
		} else {
			wait = max(out.NextPoll.Sub(workflow.Now(ctx)), time.Second)
		}
		if _, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return ch.Len() > 0 }); err != nil {
			return err
		}
	}
	drain()
	return workflow.NewContinueAsNewError(ctx, SourceWorkflow, in)
}
