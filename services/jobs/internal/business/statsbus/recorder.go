package statsbus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Writer stores batches of events: the raw events and their roll-ups in one
// transaction (all or nothing), and purges what is kept no longer.
type Writer interface {
	Write(ctx context.Context, events []Event) error
	// Purge deletes raw events of days before rawBefore, and erases the
	// visitor hashes of days before visitorsBefore.
	Purge(ctx context.Context, rawBefore, visitorsBefore time.Time) error
}

// RecorderConfig tunes the Recorder; zero values take the defaults.
type RecorderConfig struct {
	// Every is the longest an event waits in the buffer (1 s), BatchSize the
	// number of pending events that starts a write at once (500).
	Every     time.Duration
	BatchSize int
	// MaxPending bounds the buffer (100 000 events, about 10 MB): while the
	// store is away, events wait here and are written when it is back; past
	// the bound new events are dropped and counted
	// (jobs_stats_events_dropped_total). At 500 events a second that is
	// 200 s of outage without loss.
	MaxPending int
	// RawRetention is how long raw events are kept (30 days); the roll-ups
	// are kept for ever. PurgeEvery is how often the purge runs (1 h).
	RawRetention time.Duration
	PurgeEvery   time.Duration
	// Registry receives the counters (nil: not exported).
	Registry prometheus.Registerer
	Log      *slog.Logger
	Now      func() time.Time
}

// Recorder is the bounded in-process buffer between requests and the store:
// Record never blocks and does no I/O; Run writes batches.
type Recorder struct {
	cfg RecorderConfig
	w   Writer

	mu          sync.Mutex
	pending     []Event
	impressions map[impressionKey]int // index in pending of a coalescing impression
	kick        chan struct{}

	events    *prometheus.CounterVec
	dropped   prometheus.Counter
	flushes   *prometheus.CounterVec
	pendingGa prometheus.GaugeFunc
}

type impressionKey struct {
	job     int64
	channel string
	day     time.Time
	agent   Agent
}

// NewRecorder returns a recorder writing to w.
func NewRecorder(w Writer, cfg RecorderConfig) *Recorder {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 100_000
	}
	if cfg.RawRetention <= 0 {
		cfg.RawRetention = 30 * 24 * time.Hour
	}
	if cfg.PurgeEvery <= 0 {
		cfg.PurgeEvery = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Recorder{cfg: cfg, w: w, impressions: map[impressionKey]int{}, kick: make(chan struct{}, 1),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_stats_events_total",
			Help: "Job events counted (accepted into the buffer), by kind (view, click, impression) and agent (browser, crawler, none)."},
			[]string{"kind", "agent"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "jobs_stats_events_dropped_total",
			Help: "Job events dropped because the buffer was full (the store away for longer than it holds)."}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_stats_flushes_total",
			Help: "Batch writes of job events, by result (ok, error)."}, []string{"result"}),
	}
	r.pendingGa = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "jobs_stats_pending_events",
		Help: "Job events waiting in the buffer for their write."}, func() float64 { return float64(r.Pending()) })
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(r.events, r.dropped, r.flushes, r.pendingGa)
	}
	return r
}

// Record takes an event for the next batch; it never blocks. An event past
// the bound is dropped (and counted).
func (r *Recorder) Record(e Event) {
	if e.At.IsZero() {
		e.At = r.cfg.Now()
	}
	if e.N <= 0 {
		e.N = 1
	}
	if e.Agent != AgentBrowser || e.Kind == KindImpression {
		e.Visitor = 0
	}
	r.mu.Lock()
	if e.Kind == KindImpression {
		k := impressionKey{e.JobID, e.Channel, Day(e.At), e.Agent}
		if i, ok := r.impressions[k]; ok {
			r.pending[i].N += e.N
			r.mu.Unlock()
			r.count(e)
			return
		}
		if len(r.pending) < r.cfg.MaxPending {
			r.impressions[k] = len(r.pending)
		}
	}
	if len(r.pending) >= r.cfg.MaxPending {
		r.mu.Unlock()
		r.dropped.Add(float64(e.N))
		return
	}
	r.pending = append(r.pending, e)
	full := len(r.pending) >= r.cfg.BatchSize
	r.mu.Unlock()
	r.count(e)
	if full {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

func (r *Recorder) count(e Event) {
	r.events.WithLabelValues(e.Kind.String(), e.Agent.String()).Add(float64(e.N))
}

// Pending is the number of events waiting for their write.
func (r *Recorder) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// take removes what is pending.
func (r *Recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.pending
	r.pending = nil
	clear(r.impressions)
	return b
}

// giveBack puts a batch that was not written before what came meanwhile,
// within the bound (what does not fit is dropped and counted).
func (r *Recorder) giveBack(b []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	room := r.cfg.MaxPending - len(r.pending)
	if room < len(b) {
		var lost int64
		for _, e := range b[max(room, 0):] {
			lost += int64(e.N)
		}
		r.dropped.Add(float64(lost))
		b = b[:max(room, 0)]
	}
	r.pending = append(b, r.pending...)
	clear(r.impressions) // the coalescing indexes moved; new impressions start new entries
}

// Flush writes what is pending now, in batches of at most 5 000 events; on
// a failure the unwritten events go back to the buffer.
func (r *Recorder) Flush(ctx context.Context) error {
	b := r.take()
	for len(b) > 0 {
		n := min(len(b), 5000)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := r.w.Write(wctx, b[:n])
		cancel()
		if err != nil {
			r.flushes.WithLabelValues("error").Inc()
			r.giveBack(b)
			return err
		}
		r.flushes.WithLabelValues("ok").Inc()
		b = b[n:]
	}
	return nil
}

// Purge deletes the raw events older than the retention and erases the
// visitor hashes of the days before yesterday (UTC).
func (r *Recorder) Purge(ctx context.Context) error {
	today := Day(r.cfg.Now())
	return r.w.Purge(ctx, today.Add(-r.cfg.RawRetention), today.AddDate(0, 0, -1))
}

// Run writes batches every Every or BatchSize events until ctx ends, then
// writes what is left (for up to 5 s). While the store fails it retries
// with back-off (1 s doubling to 30 s), the events waiting in the buffer.
func (r *Recorder) Run(ctx context.Context) error {
	tick := time.NewTicker(r.cfg.Every)
	defer tick.Stop()
	var (
		retryAt   time.Time
		backoff   time.Duration
		nextPurge = r.cfg.Now().Add(time.Minute)
	)
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Flush(fctx); err != nil {
				r.cfg.Log.Warn("job stats: events not written at shutdown", "events", r.Pending(), "error", err)
			}
			return nil
		case <-tick.C:
		case <-r.kick:
		}
		now := r.cfg.Now()
		if now.Before(retryAt) {
			continue
		}
		if err := r.Flush(ctx); err != nil {
			backoff = min(max(2*backoff, time.Second), 30*time.Second)
			retryAt = now.Add(backoff)
			r.cfg.Log.Warn("job stats: write failed; events kept in the buffer", "pending", r.Pending(), "retry_in", backoff.String(), "error", err)
			continue
		}
		if backoff > 0 {
			r.cfg.Log.Info("job stats: writing again")
		}
		backoff, retryAt = 0, time.Time{}
		if now.After(nextPurge) {
			nextPurge = now.Add(r.cfg.PurgeEvery)
			if err := r.Purge(ctx); err != nil {
				r.cfg.Log.Warn("job stats: purge failed", "error", err)
			}
		}
	}
}
