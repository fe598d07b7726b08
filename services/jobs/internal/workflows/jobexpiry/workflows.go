// Package jobexpiry expires jobs at their expiration date with Temporal: one
// workflow per job holding a durable timer that a signal moves when the date
// changes, a scheduled sweep that expires anything overdue (so a missed start
// cannot leave a job active), and the relay that turns the expiry outbox
// written with each job into workflow starts.
package jobexpiry

import (
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// Names shared by the API, the relay and the worker.
const (
	TaskQueue          = "jobs-expiry"
	SignalReschedule   = "reschedule"
	SweepScheduleID    = "jobs-expiry-sweep"
	SweepWorkflowID    = "jobs-expiry-sweep" //nolint:gosec // G101: a workflow id, not a credential
	maxHistoryEvents   = 2000
	sweepBatch         = 1000
	activityTimeout    = 30 * time.Second
	activityMaxBackoff = time.Minute
)

// JobExpiryWorkflowID is the workflow id of a job's expiry, so that starts
// are idempotent: one workflow per job.
func JobExpiryWorkflowID(jobID int64) string { return "job-expiry-" + strconv.FormatInt(jobID, 10) }

// Input starts a job's expiry workflow.
type Input struct {
	JobID     int64
	ExpiresAt time.Time
	// RemindBefore is how long before ExpiresAt the poster gets a reminder
	// (zero: none). Runs started before the poster mails have none.
	RemindBefore time.Duration
}

// versionPosterMails marks the change that added the poster's reminder and
// expiry mails, so that runs started before it replay as they ran.
const versionPosterMails = "poster-mails"

// ExpireResult is the answer of the ExpireJob activity.
type ExpireResult struct {
	Expired bool
	Status  string
	// NotDueUntil is set when the job is active but its expiration date now
	// lies in the future (it moved): the workflow waits again.
	NotDueUntil *time.Time
}

func activityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: activityTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    activityMaxBackoff,
		},
	})
}

// JobExpiryWorkflow waits until the job's expiration date and expires it.
// A SignalReschedule carrying a new time.Time moves the timer (the
// updatable-timer pattern); the activity re-checks the date in Postgres, so a
// date moved without a signal only delays, never skips, the expiry. Since
// versionPosterMails it also starts the poster's reminder mail RemindBefore
// the date and the expiry mail after it.
func JobExpiryWorkflow(ctx workflow.Context, in Input) error {
	var a *Activities
	mails := workflow.GetVersion(ctx, versionPosterMails, workflow.DefaultVersion, 1) >= 1
	sig := workflow.GetSignalChannel(ctx, SignalReschedule)
	expiresAt := in.ExpiresAt
	var reminded time.Time // the expiration date the reminder was sent for
	for {
		wake := expiresAt
		if mails && in.RemindBefore > 0 && !reminded.Equal(expiresAt) && expiresAt.After(workflow.Now(ctx)) {
			if at := expiresAt.Add(-in.RemindBefore); at.After(workflow.Now(ctx)) {
				wake = at
			} else {
				startMail(ctx, jobmail.Input{JobID: in.JobID, Kind: jobmail.KindReminder, ExpiresAt: expiresAt})
				reminded = expiresAt
			}
		}
		if d := wake.Sub(workflow.Now(ctx)); d > 0 {
			timerCtx, cancel := workflow.WithCancel(ctx)
			timer := workflow.NewTimer(timerCtx, d)
			fired := false
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(timer, func(f workflow.Future) { fired = f.Get(ctx, nil) == nil })
			sel.AddReceive(sig, func(ch workflow.ReceiveChannel, _ bool) {
				var t time.Time
				ch.Receive(ctx, &t)
				expiresAt = t
			})
			sel.Select(ctx)
			cancel()
			if !fired || wake.Before(expiresAt) {
				if workflow.GetInfo(ctx).GetCurrentHistoryLength() > maxHistoryEvents {
					drain(ctx, sig, &expiresAt)
					return workflow.NewContinueAsNewError(ctx, JobExpiryWorkflow,
						Input{JobID: in.JobID, ExpiresAt: expiresAt, RemindBefore: in.RemindBefore})
				}
				continue // a signal moved the date, or the reminder is due
			}
		}
		var res ExpireResult
		if err := workflow.ExecuteActivity(activityOptions(ctx), a.ExpireJob, in.JobID).Get(ctx, &res); err != nil {
			return err
		}
		if res.NotDueUntil != nil && res.NotDueUntil.After(expiresAt) {
			expiresAt = *res.NotDueUntil
			continue
		}
		if mails && res.Expired {
			startMail(ctx, jobmail.Input{JobID: in.JobID, Kind: jobmail.KindExpired, ExpiresAt: expiresAt})
		}
		drain(ctx, sig, &expiresAt)
		if expiresAt.After(workflow.Now(ctx)) && !res.Expired && res.Status == jobbus.StatusActive {
			continue // a signal moved the date while the activity ran
		}
		return nil
	}
}

// startMail starts a poster mail as a child workflow that outlives this one
// (it retries while SMTP is away; the expiry never waits for it). A mail of
// the same id started before is already on its way.
func startMail(ctx workflow.Context, in jobmail.Input) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            jobmail.WorkflowID(in),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	})
	var exec workflow.Execution
	if err := workflow.ExecuteChildWorkflow(cctx, jobmail.JobMailWorkflow, in).GetChildWorkflowExecution().Get(ctx, &exec); err != nil {
		workflow.GetLogger(ctx).Info("poster mail not started", "mail", jobmail.WorkflowID(in), "error", err)
	}
}

// drain takes the signals already delivered, keeping the last date.
func drain(ctx workflow.Context, sig workflow.ReceiveChannel, expiresAt *time.Time) {
	for {
		var t time.Time
		if !sig.ReceiveAsync(&t) {
			return
		}
		*expiresAt = t
	}
}

// SweepWorkflow expires every overdue active job; the schedule runs it
// periodically so that a job whose workflow never started still expires.
func SweepWorkflow(ctx workflow.Context) (int, error) {
	var a *Activities
	var n int
	err := workflow.ExecuteActivity(activityOptions(ctx), a.SweepOverdue).Get(ctx, &n)
	return n, err
}
