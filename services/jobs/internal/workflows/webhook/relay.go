package webhook

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// dispatchBatch is how many job events one dispatch round fans out.
const dispatchBatch = 500

// Relay fans the job events out to the endpoints (webhook_deliveries, and
// a webhook_outbox row per endpoint whose pump is not running, in one
// transaction with the dispatch position) and wakes the endpoints'
// workflows from the outbox through outbox.Relay. The order of a job's
// deliveries is the pump's (their ids); a signal only wakes it.
type Relay struct {
	Store    hookbus.DeliveryStorer
	Temporal client.Client
	Log      *slog.Logger
	Metrics  *outbox.Metrics // nil: not counted
	Interval time.Duration   // the outbox relay's poll; default outbox.DefaultInterval
	// DispatchInterval is the poll of job_events (default dispatchEvery):
	// a delivery's latency waits for it, so it is short.
	DispatchInterval time.Duration
}

// dispatchEvery is the default DispatchInterval; strandedEvery how often
// the dispatch wakes endpoints left with due deliveries and no pump.
const (
	dispatchEvery = 200 * time.Millisecond
	strandedEvery = 10 * time.Second
)

func (r *Relay) relay() *outbox.Relay[hookbus.OutboxItem] {
	// Polled as the dispatch is: an idle endpoint's first delivery
	// waits for this wake-up.
	return &outbox.Relay[hookbus.OutboxItem]{Table: r.Store.OutboxTable(), Deliver: r.deliver, Log: r.Log, Metrics: r.Metrics,
		Interval: r.dispatchInterval()}
}

func (r *Relay) deliver(ctx context.Context, m outbox.Message[hookbus.OutboxItem]) error {
	return StartEndpoint(ctx, r.Temporal, m.Payload.EndpointID)
}

func (r *Relay) dispatchInterval() time.Duration {
	d := dispatchEvery
	if r.DispatchInterval > 0 {
		d = r.DispatchInterval
	}
	if r.Interval > 0 {
		d = min(d, r.Interval)
	}
	return d
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
	every := r.dispatchInterval()
	var swept time.Time
	for {
		if time.Since(swept) >= strandedEvery {
			if _, err := r.Store.WakeStranded(ctx); err != nil && ctx.Err() == nil {
				r.Log.Warn("webhook wake stranded", "error", err)
			}
			swept = time.Now()
		}
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
