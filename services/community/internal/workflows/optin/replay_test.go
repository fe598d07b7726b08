package optin

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/coworkjobs/coworkjobs/libs/temporalx/replaytest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// TestReplayHistories replays the histories of real runs recorded in
// testdata/histories: a change that running opt-in workflows could not
// replay fails here. After changing the workflow on purpose (behind
// workflow.GetVersion), record the new path too:
//
//	go test -tags=grpcnotrace ./services/community/internal/workflows/optin/ -run TestRecordHistories -record
func TestReplayHistories(t *testing.T) {
	replaytest.Replay(t, RegisterWorkflows)
}

// TestRecordHistories runs each path of the opt-in on a Temporal dev server
// with the real activities, database and mail catcher, driven as production
// drives it (the business rules write the outbox, the relay starts and
// signals), and writes their histories.
func TestRecordHistories(t *testing.T) {
	rec := replaytest.NewRecorder(t)
	ctx := context.Background()
	replaytest.StartWorker(rec, TaskQueue, Register, acts)

	// relay hands what the rules queued to Temporal, with a confirmation
	// window short enough to wait for.
	relay := func(window time.Duration) {
		t.Helper()
		r := &Relay{Outbox: store, Temporal: rec.Client, ConfirmWindow: window}
		if _, err := r.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// mailed waits until the address has n mails: the workflow is waiting.
	mailed := func(email string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); len(mailsTo(t, email)) < n; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no mail %d", email, n)
			}
		}
	}
	confirm := func(sub newsletterbus.Subscriber) {
		t.Helper()
		if _, err := bus.Confirm(ctx, signer.ConfirmToken(sub, time.Now(), time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	save := func(name, email string, want Result) {
		t.Helper()
		run := rec.Client.GetWorkflow(ctx, WorkflowID(email), "")
		var got Result
		getCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := run.Get(getCtx, &got); err != nil || got != want {
			t.Fatalf("%s: result %+v %v, want %+v", name, got, err, want)
		}
		rec.Save(name, run, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	}

	// Confirmed through the link: the confirm signal, then the welcome.
	email := "record-confirmed@example.com"
	sub := pending(t, email)
	relay(time.Hour)
	mailed(email, 1)
	confirm(sub)
	relay(time.Hour)
	save("optin-confirmed", email, Result{Outcome: OutcomeSubscribed, MailsSent: 1})

	// Never confirmed: the deadline passes and the pending record goes.
	email = "record-timeout@example.com"
	pending(t, email)
	relay(2 * time.Second)
	save("optin-timed-out", email, Result{Outcome: OutcomeExpired, MailsSent: 1})

	// Subscribed again while pending: a second mail (the resend signal), then
	// confirmed.
	email = "record-resent@example.com"
	sub = pending(t, email)
	relay(time.Hour)
	mailed(email, 1)
	exec(t, "UPDATE subscribers SET mail_requested_at = now() - interval '11 minutes' WHERE id = $1", sub.ID)
	if res, err := bus.Subscribe(ctx, newsletterbus.NewSubscription{Email: email, Consent: true}); err != nil || !res.MailQueued {
		t.Fatalf("resubscribe: %+v %v", res, err)
	}
	relay(time.Hour)
	mailed(email, 2)
	confirm(sub)
	relay(time.Hour)
	save("optin-resent-confirmed", email, Result{Outcome: OutcomeSubscribed, MailsSent: 2})

	// Confirmed over HTTP but the signal never came: found at the deadline.
	email = "record-early@example.com"
	sub = pending(t, email)
	relay(3 * time.Second)
	mailed(email, 1)
	confirm(sub) // its outbox row is not relayed
	save("optin-confirmed-seen-at-deadline", email, Result{Outcome: OutcomeSubscribed, MailsSent: 1})
	relay(time.Hour) // the late confirm finds the workflow gone: dropped

	// Already subscribed when the workflow starts: no mail.
	email = "record-member@example.com"
	sub = pending(t, email)
	if ok, err := bus.MarkSubscribed(ctx, sub.ID); !ok || err != nil {
		t.Fatal(ok, err)
	}
	relay(time.Hour)
	save("optin-already-subscribed", email, Result{Outcome: OutcomeAlreadySubscribed})
}
