package jobexpiry

import (
	"context"
	"log/slog"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// Outbox is the relay's view of the jobs database.
type Outbox interface {
	RelayOutbox(ctx context.Context, n int, send func(context.Context, jobdb.OutboxItem) error) (sent, failed int, err error)
	PurgeIdempotencyKeys(ctx context.Context, cutoff time.Time, limit int) (int64, error)
}

// Relay hands the intents written with each job (expiry timers, creation
// mails) to Temporal, and
// purges idempotency records past their replay window.
type Relay struct {
	Outbox   Outbox
	Starter  Starter
	Log      *slog.Logger
	Interval time.Duration // how often the outbox is polled; default 1s
	Batch    int           // intents per transaction; default 100
	// SendTimeout bounds one signal-with-start; default 5s.
	SendTimeout time.Duration
}

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	if r.Interval <= 0 {
		r.Interval = time.Second
	}
	if r.Batch <= 0 {
		r.Batch = 100
	}
	if r.SendTimeout <= 0 {
		r.SendTimeout = 5 * time.Second
	}
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	lastPurge := time.Time{}
	for {
		r.drain(ctx)
		if time.Since(lastPurge) > 10*time.Minute {
			if n, err := r.Outbox.PurgeIdempotencyKeys(ctx, time.Now().Add(-jobbus.IdempotencyTTL), 10000); err != nil {
				r.Log.Warn("purge idempotency keys", "error", err)
			} else {
				lastPurge = time.Now()
				if n > 0 {
					r.Log.Info("purged idempotency keys", "count", n)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// RelayOnce relays the due intents once (tests and drain).
func (r *Relay) RelayOnce(ctx context.Context) (sent, failed int, err error) {
	if r.Batch <= 0 {
		r.Batch = 100
	}
	if r.SendTimeout <= 0 {
		r.SendTimeout = 5 * time.Second
	}
	return r.Outbox.RelayOutbox(ctx, r.Batch, func(ctx context.Context, it jobdb.OutboxItem) error {
		sctx, cancel := context.WithTimeout(ctx, r.SendTimeout)
		defer cancel()
		if it.Kind == jobdb.KindCreatedMail {
			return r.Starter.Mail(sctx, jobmail.Input{JobID: it.JobID, Kind: jobmail.KindCreated})
		}
		return r.Starter.Schedule(sctx, it.JobID, it.ExpiresAt)
	})
}

func (r *Relay) drain(ctx context.Context) {
	for ctx.Err() == nil {
		sent, failed, err := r.RelayOnce(ctx)
		if err != nil {
			r.Log.Warn("relay expiry outbox", "error", err)
			return
		}
		if failed > 0 {
			r.Log.Warn("relay expiry outbox: temporal unavailable, will retry", "sent", sent, "failed", failed)
			return
		}
		if sent < r.Batch {
			return
		}
	}
}
