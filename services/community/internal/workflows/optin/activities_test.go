package optin

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

func TestActivities(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	ctx := context.Background()

	t.Run("sendConfirmationPendingMailsAndRecords", func(t *testing.T) {
		sub := pending(t, "act-send@example.com")
		v, err := env.ExecuteActivity(acts.SendConfirmation, SendInput{SubscriberID: sub.ID, TTL: 48 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		var r SendResult
		_ = v.Get(&r)
		got, _ := store.Get(ctx, sub.ID)
		if !r.Sent || r.Seq != 1 || got.MailsSent != 1 || got.MailSentAt == nil || len(mailsTo(t, "act-send@example.com")) != 1 {
			t.Fatalf("result %+v stored %+v", r, got)
		}
	})
	t.Run("sendConfirmationMissingSendsNothing", func(t *testing.T) {
		v, err := env.ExecuteActivity(acts.SendConfirmation, SendInput{SubscriberID: 987654, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		var r SendResult
		_ = v.Get(&r)
		if r.Sent || r.Status != "" {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("expirePendingRespectsNewerRequest", func(t *testing.T) {
		sub := pending(t, "act-expire@example.com")
		exec(t, "UPDATE subscribers SET request_seq = 3 WHERE id = $1", sub.ID)
		v, err := env.ExecuteActivity(acts.ExpirePending, ExpireInput{SubscriberID: sub.ID, MaxSeq: 2})
		if err != nil {
			t.Fatal(err)
		}
		var r ExpireResult
		_ = v.Get(&r)
		if r.Deleted || r.Status != newsletterbus.StatusPending || r.Seq != 3 {
			t.Fatalf("result %+v", r)
		}
		v, _ = env.ExecuteActivity(acts.ExpirePending, ExpireInput{SubscriberID: sub.ID, MaxSeq: 3})
		_ = v.Get(&r)
		if _, err := store.Get(ctx, sub.ID); !r.Deleted || !errors.Is(err, newsletterbus.ErrNotFound) {
			t.Fatalf("result %+v, get %v", r, err)
		}
	})
	t.Run("expirePendingKeepsSubscribed", func(t *testing.T) {
		sub := pending(t, "act-keep@example.com")
		if _, err := env.ExecuteActivity(acts.MarkSubscribed, sub.ID); err != nil {
			t.Fatal(err)
		}
		v, _ := env.ExecuteActivity(acts.ExpirePending, ExpireInput{SubscriberID: sub.ID, MaxSeq: 9})
		var r ExpireResult
		_ = v.Get(&r)
		if r.Deleted || r.Status != newsletterbus.StatusSubscribed {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("sendWelcomeOnlyToSubscribed", func(t *testing.T) {
		sub := pending(t, "act-welcome@example.com")
		if _, err := env.ExecuteActivity(acts.SendWelcome, sub.ID); err != nil {
			t.Fatal(err)
		}
		if n := len(mailsTo(t, "act-welcome@example.com")); n != 0 {
			t.Fatalf("welcome sent to a pending address")
		}
	})
}
