package alertmail

import (
	"context"
	"net"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
)

// While SMTP is away an alert mail waits, with back-off, and goes once it
// is back; the same mail again (a relay retried) is skipped once confirmed.
func TestAlertMailWaitsForSMTP(t *testing.T) {
	t.Parallel()
	r, _ := fixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing answers there yet
	if r.Mail, err = mailer.New("smtp://"+addr, "coworkjobs <jobs@coworkjobs.example>"); err != nil {
		t.Fatal(err)
	}
	email := "patient-" + alertbus.NewNonce()[:8] + "@seeker.example"
	a := saved(t, r, email, "city=smtp-away&q=host", false)

	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(tlog.NewStructuredLogger(quiet))
	env := ts.NewTestWorkflowEnvironment()
	Register(env, &Activities{Mails: r})
	attempts := 0
	var dir string
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		attempts++
		if attempts == 3 { // SMTP comes back before the third attempt
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return
			}
			dir = t.TempDir()
			c, err := mailcatcher.New(dir, quiet)
			if err != nil {
				t.Error(err)
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = c.Serve(ctx, ln2) }()
			t.Cleanup(func() { cancel(); <-done })
		}
	})
	in := MailInput{OutboxID: 1, AlertID: a.ID, Kind: KindConfirm}
	env.ExecuteWorkflow(AlertMailWorkflow, in)
	var res string
	if err := env.GetWorkflowResult(&res); err != nil || res != ResultSent || attempts != 3 {
		t.Fatalf("result %q %v after %d attempts, want sent after 3", res, err, attempts)
	}
	got, err := mailcatcher.For(dir, email)
	if err != nil || len(got) != 1 || !strings.Contains(got[0].Subject, "Confirm") {
		t.Fatalf("%d mails after SMTP came back (%v)", len(got), err)
	}
	if err := db(r).Confirm(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := (&Activities{Mails: r}).SendAlertMail(context.Background(), in); err != nil || res != ResultSkipped {
		t.Fatalf("the confirmation of a confirmed alert: %q %v, want skipped", res, err)
	}
	if id := MailWorkflowID(MailInput{AlertID: 7, Kind: KindMatch, JobID: 9}); id != "alert-match-7-9" {
		t.Fatal(id)
	}
}
