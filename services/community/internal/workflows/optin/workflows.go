// Package optin is the newsletter double opt-in as a Temporal workflow: one
// workflow per address mails a confirmation link, waits for the confirmation
// up to a deadline (moved on each re-send), then subscribes the address or
// removes the pending record.
package optin

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// TaskQueue is the queue the community worker polls.
const TaskQueue = "community-newsletter"

// Signals the workflow waits for.
const (
	SignalConfirm = "confirm"
	SignalResend  = "resend"
)

// Outcomes of a workflow run.
const (
	OutcomeSubscribed        = "subscribed"
	OutcomeExpired           = "expired"
	OutcomeAlreadySubscribed = "already_subscribed"
	OutcomeGone              = "gone" // the record went away (unsubscribed or removed)
)

// DefaultConfirmWindow is how long a confirmation link is awaited.
const DefaultConfirmWindow = 48 * time.Hour

// WorkflowID is the id of an address's opt-in workflow: built from the
// address hash (no address in Temporal), so starting it twice is idempotent.
func WorkflowID(email string) string {
	return "newsletter-optin-" + newsletterbus.EmailHash(email)[:32]
}

// Input starts a workflow.
type Input struct {
	SubscriberID  int64
	Seq           int           // the request_seq the start was queued for
	ConfirmWindow time.Duration // 0 = DefaultConfirmWindow
}

// ResendSignal asks for another confirmation mail for request Seq; a Seq the
// workflow has already mailed for is ignored, so redelivered signals are harmless.
type ResendSignal struct {
	Seq int
}

// Result is how a run ended.
type Result struct {
	Outcome   string
	MailsSent int
}

// OptIn is the workflow.
func OptIn(ctx workflow.Context, in Input) (Result, error) {
	window := in.ConfirmWindow
	if window <= 0 {
		window = DefaultConfirmWindow
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
		},
	})
	var a *Activities
	res := Result{}

	send := func() (SendResult, error) {
		var r SendResult
		err := workflow.ExecuteActivity(ctx, a.SendConfirmation, SendInput{SubscriberID: in.SubscriberID, TTL: window}).Get(ctx, &r)
		if r.Sent {
			res.MailsSent++
		}
		return r, err
	}
	welcome := func() (Result, error) {
		var ok bool
		if err := workflow.ExecuteActivity(ctx, a.MarkSubscribed, in.SubscriberID).Get(ctx, &ok); err != nil {
			return res, err
		}
		if !ok {
			res.Outcome = OutcomeGone
			return res, nil
		}
		if err := workflow.ExecuteActivity(ctx, a.SendWelcome, in.SubscriberID).Get(ctx, nil); err != nil {
			return res, err
		}
		res.Outcome = OutcomeSubscribed
		return res, nil
	}
	notPending := func(status string) (Result, error) {
		if status == newsletterbus.StatusSubscribed {
			res.Outcome = OutcomeAlreadySubscribed
		} else {
			res.Outcome = OutcomeGone
		}
		return res, nil
	}

	r, err := send()
	if err != nil {
		return res, err
	}
	if !r.Sent {
		return notPending(r.Status)
	}
	sentSeq := max(in.Seq, r.Seq)
	deadline := workflow.Now(ctx).Add(window)

	confirmCh := workflow.GetSignalChannel(ctx, SignalConfirm)
	resendCh := workflow.GetSignalChannel(ctx, SignalResend)
	for {
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, deadline.Sub(workflow.Now(ctx)))
		var confirmed, expired, resend bool
		var sig ResendSignal
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(confirmCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			confirmed = true
		})
		sel.AddReceive(resendCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, &sig)
			resend = sig.Seq > sentSeq
		})
		sel.AddFuture(timer, func(f workflow.Future) {
			if f.Get(ctx, nil) == nil {
				expired = true
			}
		})
		sel.Select(ctx)
		cancelTimer()

		switch {
		case confirmed:
			return welcome()
		case resend:
			r, err := send()
			if err != nil {
				return res, err
			}
			if !r.Sent {
				return notPending(r.Status)
			}
			sentSeq = max(sig.Seq, r.Seq)
			deadline = workflow.Now(ctx).Add(window) // the new link gets the full window
		case expired:
			var e ExpireResult
			if err := workflow.ExecuteActivity(ctx, a.ExpirePending, ExpireInput{SubscriberID: in.SubscriberID, MaxSeq: sentSeq}).Get(ctx, &e); err != nil {
				return res, err
			}
			switch {
			case e.Deleted:
				res.Outcome = OutcomeExpired
				return res, nil
			case e.Status == newsletterbus.StatusSubscribed:
				// Confirmed over HTTP; the signal has not arrived yet.
				return welcome()
			case e.Status == newsletterbus.StatusPending:
				// A newer request raced the deadline: mail it and wait again.
				r, err := send()
				if err != nil {
					return res, err
				}
				if !r.Sent {
					return notPending(r.Status)
				}
				sentSeq = max(e.Seq, r.Seq)
				deadline = workflow.Now(ctx).Add(window)
			default:
				return notPending(e.Status)
			}
		}
	}
}
