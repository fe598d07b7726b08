package jobexpiry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// purgeEvery is how often idempotency records past their replay window,
// and job events past the retention, are deleted, at most purgeBatch at a time.
const (
	purgeEvery = 10 * time.Minute
	purgeBatch = 10000
)

// Relay hands the intents written with each job (expiry timers, creation
// mails) to Temporal through outbox.Relay, and purges idempotency records
// past their replay window.
type Relay struct {
	Outbox   jobbus.OutboxStorer
	Starter  Starter
	Log      *slog.Logger
	Metrics  *outbox.Metrics // nil: not counted
	Interval time.Duration   // how often the outbox is polled; default outbox.DefaultInterval
	Batch    int             // intents per round; default outbox.DefaultBatch
}

func (r *Relay) relay() *outbox.Relay[jobbus.OutboxItem] {
	return &outbox.Relay[jobbus.OutboxItem]{Table: r.Outbox.OutboxTable(), Deliver: r.deliver,
		Log: r.Log, Metrics: r.Metrics, Interval: r.Interval, Batch: r.Batch}
}

// deliver starts the poster's mail or moves the job's timer
// (signal-with-start).
func (r *Relay) deliver(ctx context.Context, m outbox.Message[jobbus.OutboxItem]) error {
	it := m.Payload
	if it.Kind == jobbus.KindCreatedMail {
		return r.Starter.Mail(ctx, jobmail.Input{JobID: it.JobID, Kind: jobmail.KindCreated})
	}
	return r.Starter.Schedule(ctx, it.JobID, it.ExpiresAt)
}

// Run relays and purges until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { r.purge(ctx) })
	err := r.relay().Run(ctx)
	wg.Wait()
	return err
}

// RelayOnce relays the due intents once (tests).
func (r *Relay) RelayOnce(ctx context.Context) (sent, failed int, err error) {
	res, err := r.relay().RunOnce(ctx)
	return res.Delivered, res.Failed, err
}

func (r *Relay) purge(ctx context.Context) {
	for {
		wait := purgeEvery
		n, err := r.Outbox.PurgeIdempotencyKeys(ctx, time.Now().Add(-jobbus.IdempotencyTTL), purgeBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn("purge idempotency keys", "error", err)
			wait = time.Minute
		case n > 0:
			r.Log.Info("purged idempotency keys", "count", n)
		}
		n, err = r.Outbox.PurgeEvents(ctx, time.Now().Add(-jobbus.Retention), purgeBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn("purge job events", "error", err)
			wait = time.Minute
		case n > 0:
			r.Log.Info("purged job events", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
