package indexing

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// dispatchBatch is how many job events one batch of the reader reads.
const dispatchBatch = 500

// DefaultDailyQuota is the Indexing API's default publish quota a day.
const DefaultDailyQuota = 200

// Metrics counts the notices.
type Metrics struct {
	Sent, Retried, Failed prometheus.Counter
	// Waiting is how many due notices the day's quota held back at the last round.
	Waiting prometheus.Gauge
}

// NewMetrics registers the notices' metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		Sent:    f.NewCounter(prometheus.CounterOpts{Name: "jobs_indexing_notices_sent_total", Help: "Indexing API notices accepted."}),
		Retried: f.NewCounter(prometheus.CounterOpts{Name: "jobs_indexing_notices_retried_total", Help: "Indexing API notices that failed and will be tried again."}),
		Failed:  f.NewCounter(prometheus.CounterOpts{Name: "jobs_indexing_notices_failed_total", Help: "Indexing API notices refused for good (a 4xx other than 429)."}),
		Waiting: f.NewGauge(prometheus.GaugeOpts{Name: "jobs_indexing_notices_waiting_quota", Help: "Due Indexing API notices held back by the daily quota."}),
	}
}

// Reader is the index notifier's reader of the event log.
const Reader = "indexing"

// Relay turns job events into notices (a reader of the event log:
// eventbus) and sends them.
type Relay struct {
	Store   indexbus.NoticeStorer
	Readers eventbus.Storer   // the event log's readers
	Send    indexbus.SendFunc // (*Client).Send
	BaseURL string            // the public site, as the sitemap lists it
	// DailyQuota is how many notices a UTC day may send (default DefaultDailyQuota).
	DailyQuota int
	Batch      int              // notices a call (default and at most MaxBatch)
	Now        func() time.Time // default time.Now; tests move it
	Interval   time.Duration    // between rounds (default outbox.DefaultInterval)
	// Back-off of a failed notice, as the outbox relays do (zero: their defaults).
	MinBackoff, MaxBackoff time.Duration
	Metrics                *Metrics // nil: not counted
	Log                    *slog.Logger
}

// Run dispatches and sends until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		r.loop(ctx, "indexing dispatch", func() (bool, error) {
			_, err := r.DispatchOnce(ctx) // reads until it has caught up
			return false, err
		})
	})
	r.loop(ctx, "indexing send", func() (bool, error) {
		res, err := r.SendOnce(ctx)
		return res.Sent+res.Retried+res.Failed == r.batch() && res.Waiting == 0, err
	})
	wg.Wait()
	return nil
}

func (r *Relay) loop(ctx context.Context, what string, round func() (more bool, err error)) {
	every := r.Interval
	if every <= 0 {
		every = outbox.DefaultInterval
	}
	for {
		more, err := round()
		wait := every
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn(what, "error", err)
		case more:
			wait = 0 // a backlog: the next round at once
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (r *Relay) batch() int {
	if r.Batch <= 0 || r.Batch > MaxBatch {
		return MaxBatch
	}
	return r.Batch
}

// DispatchOnce reads the events past the notifier's position and queues
// their notices, until it has caught up; it reports how many events it
// read. Several workers take turns (the reader's lease).
func (r *Relay) DispatchOnce(ctx context.Context) (int, error) {
	run := &eventbus.Runner{Store: r.Readers, Reader: Reader, Batch: dispatchBatch,
		Handle: func(ctx context.Context, evs []jobbus.JobEvent) error {
			_, err := r.Store.Notices(ctx, r.BaseURL, evs)
			return err
		}}
	out, err := run.Run(ctx, owner)
	return out.Handled, err
}

// owner names this process in the reader's lease.
var owner = fmt.Sprintf("indexing-%d-%x", os.Getpid(), rand.Uint64()) //nolint:gosec // G404: a name, not a secret

// SendOnce sends one batch (tests call it directly).
func (r *Relay) SendOnce(ctx context.Context) (indexbus.Round, error) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	quota := r.DailyQuota
	if quota <= 0 {
		quota = DefaultDailyQuota
	}
	backoff := (&outbox.Relay[struct{}]{MinBackoff: r.MinBackoff, MaxBackoff: r.MaxBackoff}).Backoff
	res, err := r.Store.Send(ctx, now(), quota, r.batch(), backoff, r.Send)
	if err == nil && r.Metrics != nil {
		r.Metrics.Sent.Add(float64(res.Sent))
		r.Metrics.Retried.Add(float64(res.Retried))
		r.Metrics.Failed.Add(float64(res.Failed))
		r.Metrics.Waiting.Set(float64(res.Waiting))
	}
	if res.Waiting > 0 && r.Log != nil {
		r.Log.Info("indexing notices wait for the next day's quota", "waiting", res.Waiting)
	}
	return res, err
}
