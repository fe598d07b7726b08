package optin

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// recorder stands in for the Temporal frontend (the relay's only remote call);
// the outbox itself is the real table.
type recorder struct {
	down       bool
	notFound   bool
	starts     []string
	signals    []string
	lastInput  Input
	lastResend ResendSignal
}

func (r *recorder) SignalWithStartWorkflow(_ context.Context, id, signal string, arg any, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	if r.down {
		return nil, errors.New("temporal unavailable")
	}
	if o.ID != id || o.TaskQueue != TaskQueue || signal != SignalResend {
		return nil, errors.New("bad options")
	}
	r.starts = append(r.starts, id)
	r.lastResend = arg.(ResendSignal)
	r.lastInput = args[0].(Input)
	return nil, nil
}

func (r *recorder) SignalWorkflow(_ context.Context, id, _ string, signal string, _ any) error {
	if r.down {
		return errors.New("temporal unavailable")
	}
	if r.notFound {
		return serviceerror.NewNotFound("workflow not found")
	}
	r.signals = append(r.signals, id+":"+signal)
	return nil
}

func outboxFor(t *testing.T, email string) (n, attempts int) {
	t.Helper()
	_ = pool.QueryRow(context.Background(), "SELECT count(*), coalesce(max(attempts), 0) FROM newsletter_outbox WHERE email = $1",
		email).Scan(&n, &attempts)
	return n, attempts
}

func TestRelay(t *testing.T) {
	ctx := context.Background()
	const email = "relay@example.com"
	// Rows other tests left would go first: while Temporal is down a round
	// tries only its first row.
	exec(t, "DELETE FROM newsletter_outbox")
	sub := pending(t, email)

	// Temporal down: the row stays, with one failed attempt, and is not due again yet.
	rec := &recorder{down: true}
	relay := &Relay{Outbox: store, Temporal: rec}
	if _, err := relay.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, attempts := outboxFor(t, email); n != 1 || attempts != 1 {
		t.Fatalf("outbox rows %d attempts %d", n, attempts)
	}

	// Temporal back and the row due: signal-with-start of the address's workflow.
	exec(t, "UPDATE newsletter_outbox SET next_attempt_at = now() WHERE email = $1", email)
	rec.down = false
	if _, err := relay.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := outboxFor(t, email); n != 0 {
		t.Fatalf("delivered row kept")
	}
	found := false
	for _, id := range rec.starts {
		found = found || id == WorkflowID(email)
	}
	if !found || rec.lastInput.SubscriberID == 0 {
		t.Fatalf("starts %v input %+v", rec.starts, rec.lastInput)
	}

	// Confirmation over HTTP queues the confirm signal; a finished workflow is fine.
	if _, err := bus.Confirm(ctx, signer.ConfirmToken(sub, time.Now(), time.Hour)); err != nil {
		t.Fatal(err)
	}
	rec.notFound = true
	if _, err := relay.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := outboxFor(t, email); n != 0 {
		t.Fatalf("confirm row kept after NotFound")
	}
}
