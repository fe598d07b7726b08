package optin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Outbox is the table the relay drains.
type Outbox interface {
	Relay(ctx context.Context, limit int, deliver func(context.Context, newsletterbus.OutboxItem) error) (int, error)
}

// Temporal is the part of the Temporal client the relay uses.
type Temporal interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID string, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
	SignalWorkflow(ctx context.Context, workflowID string, runID string, signalName string, arg any) error
}

// Relay moves outbox rows to Temporal: a mail request becomes a
// signal-with-start of the address's workflow (started if absent, signalled
// to re-send if running), a confirmation becomes the confirm signal.
type Relay struct {
	Outbox        Outbox
	Temporal      Temporal
	ConfirmWindow time.Duration
	Batch         int
	Log           *slog.Logger
}

// Deliver hands one outbox row to Temporal.
func (r *Relay) Deliver(ctx context.Context, it newsletterbus.OutboxItem) error {
	id := WorkflowID(it.Email)
	switch it.Kind {
	case newsletterbus.OutboxRequestMail:
		_, err := r.Temporal.SignalWithStartWorkflow(ctx, id, SignalResend, ResendSignal{Seq: it.RequestSeq},
			client.StartWorkflowOptions{
				ID: id, TaskQueue: TaskQueue,
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			},
			OptIn, Input{SubscriberID: it.SubscriberID, Seq: it.RequestSeq, ConfirmWindow: r.ConfirmWindow})
		if err != nil {
			return fmt.Errorf("signal-with-start %s: %w", id, err)
		}
		return nil
	case newsletterbus.OutboxConfirmed:
		err := r.Temporal.SignalWorkflow(ctx, id, "", SignalConfirm, nil)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil // the workflow already ended (it saw the confirmation at its deadline)
		}
		if err != nil {
			return fmt.Errorf("signal %s: %w", id, err)
		}
		return nil
	}
	return fmt.Errorf("unknown outbox kind %q", it.Kind)
}

func (r *Relay) batch() int {
	if r.Batch <= 0 {
		return 50
	}
	return r.Batch
}

// RunOnce drains one batch and returns how many rows were delivered.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	return r.Outbox.Relay(ctx, r.batch(), func(ctx context.Context, it newsletterbus.OutboxItem) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err := r.Deliver(ctx, it)
		if err != nil && r.Log != nil {
			r.Log.Warn("outbox delivery failed; will retry", "outbox_id", it.ID, "kind", it.Kind, "attempts", it.Attempts+1, "error", err)
		}
		return err
	})
}

// Run drains the outbox every interval until ctx ends; a full batch is
// followed at once by the next.
func (r *Relay) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := r.RunOnce(ctx)
		if err != nil && ctx.Err() == nil && r.Log != nil {
			r.Log.Error("outbox relay", "error", err)
		}
		if err == nil && n >= r.batch() {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
