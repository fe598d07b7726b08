package alertmail

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TaskQueue is the alert mails' and the digest clock's queue.
const TaskQueue = "jobs-alerts"

// Kinds of alert mail (alert_outbox.kind).
const (
	KindConfirm = "confirm"
	KindMatch   = "match"
	KindDigest  = "digest"
)

// Results of SendAlertMail.
const (
	ResultSent    = "sent"
	ResultSkipped = "skipped" // the alert or job is gone, or nothing is left to tell
)

// MailInput is one alert mail: a row of alert_outbox.
type MailInput struct {
	OutboxID int64
	AlertID  int64
	Kind     string
	JobID    int64     // an instant match's job
	DigestAt time.Time // a digest's: the sent_at of its pairs
}

// MailWorkflowID makes a mail once: an instant match once per (alert, job),
// a digest once per (alert, morning), a confirmation once per request.
func MailWorkflowID(in MailInput) string {
	a := strconv.FormatInt(in.AlertID, 10)
	switch in.Kind {
	case KindMatch:
		return "alert-match-" + a + "-" + strconv.FormatInt(in.JobID, 10)
	case KindDigest:
		return "alert-digest-" + a + "-" + strconv.FormatInt(in.DigestAt.UnixMicro(), 10)
	}
	return "alert-" + in.Kind + "-" + strconv.FormatInt(in.OutboxID, 10)
}

// AlertMailWorkflow sends one alert mail, retrying with back-off for as long
// as SMTP refuses (as jobmail's); a mail with nothing left to tell is
// skipped by the activity.
func AlertMailWorkflow(ctx workflow.Context, in MailInput) (string, error) {
	var a *Activities
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Minute,
		},
	})
	var res string
	err := workflow.ExecuteActivity(ctx, a.SendAlertMail, in).Get(ctx, &res)
	return res, err
}

// Digest clock defaults.
const (
	DefaultClockPeriod = 15 * time.Minute
	// DefaultClockTicks is the ticks of one run before continue-as-new (a
	// day of quarter hours: a history of a few hundred events).
	DefaultClockTicks = 96
	// ClockWorkflowID is the one clock's id.
	ClockWorkflowID = "alert-digest-clock"
)

// ClockInput tunes the digest clock (zero values: the defaults).
type ClockInput struct {
	Period time.Duration
	Ticks  int
}

// TickResult is what one tick took.
type TickResult struct {
	Alerts, Digests int
}

// DigestClockWorkflow is the digests' clock: it sleeps with a workflow timer
// to the next multiple of Period (quarter hours), then runs TakeDigests with
// that workflow time, which takes the alerts due by then (each alert keeps
// its next_digest_at, 08:00 in its own zone) and queues their digests in
// alert_outbox. After Ticks ticks it continues as new.
//
// Timers, not a Temporal schedule: one clock serves every time zone (the
// due times live with the alerts, not in 100 000 schedules), a worker down
// for hours catches up at its first tick (everything due by then is taken),
// and the time-skipping test environment runs timers (it runs no
// schedules), so the tests drive this very workflow through days.
func DigestClockWorkflow(ctx workflow.Context, in ClockInput) error {
	period, ticks := in.Period, in.Ticks
	if period <= 0 {
		period = DefaultClockPeriod
	}
	if ticks <= 0 {
		ticks = DefaultClockTicks
	}
	var a *Activities
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
	for range ticks {
		now := workflow.Now(ctx)
		next := now.Truncate(period).Add(period)
		if err := workflow.Sleep(ctx, next.Sub(now)); err != nil {
			return err
		}
		var res TickResult
		if err := workflow.ExecuteActivity(actx, a.TakeDigests, workflow.Now(ctx)).Get(actx, &res); err != nil {
			return err
		}
		if res.Alerts > 0 {
			workflow.GetLogger(ctx).Info("digests taken", "alerts", res.Alerts, "digests", res.Digests)
		}
	}
	return workflow.NewContinueAsNewError(ctx, DigestClockWorkflow, in)
}
