package optin

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

type harness struct {
	testsuite.WorkflowTestSuite
}

func (h *harness) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	h.SetLogger(nil)
	env := h.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(OptIn)
	env.RegisterActivity(acts)
	return env
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) Result {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

var confirmLink = regexp.MustCompile(`https://coworkjobs\.example/v2/newsletters/confirm\?token=(\S+)`)

func TestOptInConfirmed(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "confirmed@example.com")
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalConfirm, nil) }, 5*time.Hour)
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})

	if r := result(t, env); r.Outcome != OutcomeSubscribed || r.MailsSent != 1 {
		t.Fatalf("result %+v", r)
	}
	got, _ := store.GetByEmail(context.Background(), "confirmed@example.com")
	if got.Status != newsletterbus.StatusSubscribed || got.ConfirmedAt == nil || got.MailsSent != 1 || got.MailSentAt == nil {
		t.Fatalf("stored %+v", got)
	}
	mails := mailsTo(t, "confirmed@example.com")
	if len(mails) != 2 {
		t.Fatalf("%d mails, want confirmation + welcome", len(mails))
	}
	m := confirmLink.FindStringSubmatch(mails[0].Text)
	if m == nil {
		t.Fatalf("no confirm link in %q", mails[0].Text)
	}
	token, _ := url.QueryUnescape(m[1])
	tok, err := signer.Verify(token, newsletterbus.PurposeConfirm, time.Now())
	if err != nil || tok.SubscriberID != sub.ID {
		t.Fatalf("mailed token: %+v %v", tok, err)
	}
	if _, err := signer.Verify(token, newsletterbus.PurposeConfirm, time.Now().Add(49*time.Hour)); !errors.Is(err, newsletterbus.ErrTokenExpired) {
		t.Fatalf("mailed token does not expire after 48h: %v", err)
	}
	if mails[1].Subject != "Welcome to the coworkjobs newsletter" || mails[1].Header.Get("List-Unsubscribe") == "" {
		t.Fatalf("welcome %+v", mails[1].Header)
	}
}

func TestOptInTimedOutRemovesPending(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "timeout@example.com")
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})

	if r := result(t, env); r.Outcome != OutcomeExpired || r.MailsSent != 1 {
		t.Fatalf("result %+v", r)
	}
	if _, err := store.GetByEmail(context.Background(), "timeout@example.com"); !errors.Is(err, newsletterbus.ErrNotFound) {
		t.Fatalf("pending record kept: %v", err)
	}
	if n := len(mailsTo(t, "timeout@example.com")); n != 1 {
		t.Fatalf("%d mails", n)
	}
}

func TestOptInResubscribeWhilePending(t *testing.T) {
	var h harness
	env := h.env(t)
	const email = "again@example.com"
	sub := pending(t, email)
	// The relay's signal-with-start delivers the start's own request: ignored.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalResend, ResendSignal{Seq: 1}) }, time.Minute)
	// 30 h later the person subscribes again, past the re-send interval.
	env.RegisterDelayedCallback(func() {
		exec(t, "UPDATE subscribers SET mail_requested_at = now() - interval '11 minutes' WHERE id = $1", sub.ID)
		res, err := bus.Subscribe(context.Background(), newsletterbus.NewSubscription{Email: email, Consent: true})
		if err != nil || !res.MailQueued || res.Status != newsletterbus.StatusPending {
			t.Errorf("resubscribe: %+v %v", res, err)
		}
		env.SignalWorkflow(SignalResend, ResendSignal{Seq: 2})
		env.SignalWorkflow(SignalResend, ResendSignal{Seq: 2}) // redelivered by the relay: ignored
	}, 30*time.Hour)
	// 60 h after the start the first deadline has passed, the re-sent one has not.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalConfirm, nil) }, 60*time.Hour)
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})

	if r := result(t, env); r.Outcome != OutcomeSubscribed || r.MailsSent != 2 {
		t.Fatalf("result %+v", r)
	}
	var rows int
	_ = pool.QueryRow(context.Background(), "SELECT count(*) FROM subscribers WHERE email = $1", email).Scan(&rows)
	got, _ := store.GetByEmail(context.Background(), email)
	if rows != 1 || got.ID != sub.ID || got.Status != newsletterbus.StatusSubscribed || got.MailsSent != 2 {
		t.Fatalf("rows %d, stored %+v", rows, got)
	}
	if n := len(mailsTo(t, email)); n != 3 {
		t.Fatalf("%d mails, want 2 confirmations + welcome", n)
	}
}

func TestOptInAlreadySubscribedSendsNothing(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "member@example.com")
	if ok, err := bus.MarkSubscribed(context.Background(), sub.ID); !ok || err != nil {
		t.Fatal(ok, err)
	}
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})
	if r := result(t, env); r.Outcome != OutcomeAlreadySubscribed || r.MailsSent != 0 {
		t.Fatalf("result %+v", r)
	}
	if n := len(mailsTo(t, "member@example.com")); n != 0 {
		t.Fatalf("%d mails", n)
	}
}

func TestOptInConfirmedOverHTTPBeforeSignal(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "early@example.com")
	env.RegisterDelayedCallback(func() {
		tok := signer.ConfirmToken(sub, time.Now(), time.Hour)
		if _, err := bus.Confirm(context.Background(), tok); err != nil {
			t.Error(err)
		}
	}, 10*time.Hour)
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})
	if r := result(t, env); r.Outcome != OutcomeSubscribed {
		t.Fatalf("result %+v", r)
	}
	if n := len(mailsTo(t, "early@example.com")); n != 2 {
		t.Fatalf("%d mails", n)
	}
}

func TestOptInNewRequestRacingDeadlineIsMailed(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "race@example.com")
	// A request recorded but not yet relayed when the deadline fires.
	env.RegisterDelayedCallback(func() { exec(t, "UPDATE subscribers SET request_seq = 2 WHERE id = $1", sub.ID) }, 47*time.Hour)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalConfirm, nil) }, 50*time.Hour)
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})
	if r := result(t, env); r.Outcome != OutcomeSubscribed || r.MailsSent != 2 {
		t.Fatalf("result %+v", r)
	}
}

func TestOptInUnsubscribedWhilePendingEnds(t *testing.T) {
	var h harness
	env := h.env(t)
	sub := pending(t, "changed-mind@example.com")
	env.RegisterDelayedCallback(func() {
		if _, err := bus.Unsubscribe(context.Background(), signer.UnsubscribeToken(sub)); err != nil {
			t.Error(err)
		}
	}, time.Hour)
	env.ExecuteWorkflow(OptIn, Input{SubscriberID: sub.ID, Seq: sub.RequestSeq})
	if r := result(t, env); r.Outcome != OutcomeGone {
		t.Fatalf("result %+v", r)
	}
	if got, _ := store.GetByEmail(context.Background(), "changed-mind@example.com"); got.Status != newsletterbus.StatusUnsubscribed {
		t.Fatalf("stored %+v", got)
	}
}

func TestWorkflowIDIsStablePerAddress(t *testing.T) {
	if WorkflowID("A@Example.com ") != WorkflowID("a@example.com") || WorkflowID("a@example.com") == WorkflowID("b@example.com") {
		t.Fatal("workflow id not derived from the normalised address")
	}
}
