package optin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Outbox is the table the relay drains.
type Outbox interface {
	OutboxTable() outbox.Table[newsletterbus.OutboxItem]
}

// Temporal is the part of the Temporal client the relay uses.
type Temporal interface {
	temporalx.SignalStarter
	SignalWorkflow(ctx context.Context, workflowID string, runID string, signalName string, arg any) error
}

// Relay moves outbox rows to Temporal through outbox.Relay: a mail request
// becomes a signal-with-start of the address's workflow (started if absent,
// signalled to re-send if running), a confirmation becomes the confirm
// signal.
type Relay struct {
	Outbox        Outbox
	Temporal      Temporal
	ConfirmWindow time.Duration
	Log           *slog.Logger
	Metrics       *outbox.Metrics // nil: not counted
	Interval      time.Duration   // how often the outbox is polled; default outbox.DefaultInterval
	Batch         int             // rows per round; default outbox.DefaultBatch
}

// Deliver hands one outbox row to Temporal.
func (r *Relay) Deliver(ctx context.Context, it newsletterbus.OutboxItem) error {
	id := WorkflowID(it.Email)
	switch it.Kind {
	case newsletterbus.OutboxRequestMail:
		return temporalx.SignalWithStart(ctx, r.Temporal, id, TaskQueue, SignalResend, ResendSignal{Seq: it.RequestSeq},
			OptIn, Input{SubscriberID: it.SubscriberID, Seq: it.RequestSeq, ConfirmWindow: r.ConfirmWindow})
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

func (r *Relay) relay() *outbox.Relay[newsletterbus.OutboxItem] {
	return &outbox.Relay[newsletterbus.OutboxItem]{Table: r.Outbox.OutboxTable(), Log: r.Log, Metrics: r.Metrics,
		Interval: r.Interval, Batch: r.Batch,
		Deliver: func(ctx context.Context, m outbox.Message[newsletterbus.OutboxItem]) error {
			return r.Deliver(ctx, m.Payload)
		}}
}

// RunOnce relays one round and returns how many rows were delivered (tests).
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	res, err := r.relay().RunOnce(ctx)
	return res.Delivered, err
}

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) error { return r.relay().Run(ctx) }
