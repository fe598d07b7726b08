// Package jobmail tells a job's poster what happens to the job: a mail on
// creation (its links, the payment link when a payment is due), a few days
// before it expires, and when it has expired. Each mail is a Temporal
// workflow whose activity retries while SMTP is away, so a mail once
// decided is never lost, and whose id makes it once per job and event.
package jobmail

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Kind is what a mail is about.
type Kind string

// Kinds of mail.
const (
	KindCreated  Kind = "created"
	KindReminder Kind = "reminder"
	KindExpired  Kind = "expired"
)

// Results of SendJobMail.
const (
	ResultSent    = "sent"
	ResultSkipped = "skipped" // the job is gone or no longer in the state the mail is about
)

// Input is one mail about one job. ExpiresAt names the listing period a
// reminder or an expiry mail is about (zero for a creation mail).
type Input struct {
	JobID     int64
	Kind      Kind
	ExpiresAt time.Time
}

// WorkflowID makes a mail once per job, kind and listing period.
func WorkflowID(in Input) string {
	id := "job-mail-" + string(in.Kind) + "-" + strconv.FormatInt(in.JobID, 10)
	if !in.ExpiresAt.IsZero() {
		id += "-" + strconv.FormatInt(in.ExpiresAt.Unix(), 10)
	}
	return id
}

// JobMailWorkflow sends one mail. The activity retries with back-off for as
// long as SMTP refuses (capped at ten minutes between attempts); a mail that
// cannot ever be sent (no such job, an address that is not one) is skipped
// by the activity, not retried.
func JobMailWorkflow(ctx workflow.Context, in Input) (string, error) {
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
	err := workflow.ExecuteActivity(ctx, a.SendJobMail, in).Get(ctx, &res)
	return res, err
}
