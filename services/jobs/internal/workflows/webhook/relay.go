package webhook

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
)

// dispatchBatch is how many job events one dispatch round fans out.
const dispatchBatch = 500

// Relay fans the job events out to the endpoints (webhook_deliveries and
// webhook_outbox, in one transaction with the dispatch position) and hands
// the outbox to the (endpoint, job) workflows through outbox.Relay. The
// order of a job's deliveries is the workflow's (their ids); a signal only
// wakes it.
type Relay struct {
	Store    *hookdb.Store
	Temporal client.Client
	Log      *slog.Logger
	Metrics  *outbox.Metrics // nil: not counted
	Interval time.Duration   // default outbox.DefaultInterval
}

func (r *Relay) relay() *outbox.Relay[hookdb.OutboxItem] {
	return &outbox.Relay[hookdb.OutboxItem]{Table: r.Store.OutboxTable(), Deliver: r.deliver, Log: r.Log, Metrics: r.Metrics,
		Interval: r.Interval}
}

func (r *Relay) deliver(ctx context.Context, m outbox.Message[hookdb.OutboxItem]) error {
	return Start(ctx, r.Temporal, m.Payload.EndpointID, m.Payload.JobID, m.Payload.DeliveryID)
}

// Run dispatches and relays until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { r.dispatch(ctx) })
	err := r.relay().Run(ctx)
	wg.Wait()
	return err
}

func (r *Relay) dispatch(ctx context.Context) {
	every := r.Interval
	if every <= 0 {
		every = outbox.DefaultInterval
	}
	for {
		n, err := r.DispatchOnce(ctx)
		wait := every
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn("webhook dispatch", "error", err)
		case n == dispatchBatch:
			wait = 0 // a backlog: the next round at once
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// DispatchOnce runs one dispatch round and reports how many events it
// read (tests call it directly).
func (r *Relay) DispatchOnce(ctx context.Context) (int, error) {
	n, _, err := r.Store.Dispatch(ctx, dispatchBatch)
	return n, err
}

// RelayOnce relays the due outbox rows once (tests).
func (r *Relay) RelayOnce(ctx context.Context) (outbox.Result, error) {
	return r.relay().RunOnce(ctx)
}
