package temporalx

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Worker runs a Temporal worker that may start before Temporal does: `make
// run` brings Temporal up beside the services, and in a cluster the worker
// pod may come up first. Build its client with client.NewLazyClient, so
// nothing dials before Run.
type Worker struct {
	Client    client.Client
	TaskQueue string
	Options   worker.Options
	// Register adds the workflows and activities to each worker Run builds.
	Register func(worker.Registry)
	Log      *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between start attempts while
	// Temporal is unreachable (defaults 1s and 30s); each wait doubles, with
	// jitter so that a fleet of workers does not retry in step.
	MinBackoff, MaxBackoff time.Duration

	polling atomic.Bool
}

// NewWorker is a Worker on taskQueue whose workers register their workflows
// and activities with register(r, acts), the function the tests register
// with too.
func NewWorker[A any](c client.Client, taskQueue string, register func(worker.Registry, A), acts A, log *slog.Logger) *Worker {
	return &Worker{Client: c, TaskQueue: taskQueue, Log: log, Register: func(r worker.Registry) { register(r, acts) }}
}

// ErrNotPolling is Ready's answer until the worker has started.
var ErrNotPolling = errors.New("temporal worker not started yet: Temporal unreachable")

// Ready is nil once the worker polls its task queue: the readiness of a
// worker process.
func (w *Worker) Ready() error {
	if w.polling.Load() {
		return nil
	}
	return ErrNotPolling
}

// Collector exports Ready as the gauge temporal_worker_polling{task_queue}
// (1 once the worker polls), for a process whose only port serves /metrics.
func (w *Worker) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "temporal_worker_polling",
		Help:        "1 once this process's Temporal worker has started polling its task queue, 0 while it waits for Temporal.",
		ConstLabels: prometheus.Labels{"task_queue": w.TaskQueue},
	}, func() float64 {
		if w.polling.Load() {
			return 1
		}
		return 0
	})
}

// Run starts the worker and keeps it polling until ctx ends. While Temporal
// is unreachable it retries the start with back-off, logging each attempt.
func (w *Worker) Run(ctx context.Context) error {
	minB, maxB := w.MinBackoff, w.MaxBackoff
	if minB <= 0 {
		minB = time.Second
	}
	if maxB < minB {
		maxB = max(30*time.Second, minB)
	}
	wait := minB
	for attempt := 1; ; attempt++ {
		// A worker's Start is memoized, failure included: each attempt
		// needs a new worker.
		tw := worker.New(w.Client, w.TaskQueue, w.Options)
		w.Register(tw)
		err := tw.Start()
		if err == nil {
			w.polling.Store(true)
			w.Log.Info("temporal worker started", "task_queue", w.TaskQueue, "attempts", attempt)
			<-ctx.Done()
			w.polling.Store(false)
			tw.Stop()
			return nil
		}
		if ctx.Err() != nil {
			return nil //nolint:nilerr // stopping (ctx done) is not a failure to start
		}
		// Jitter in [wait/2, wait].
		d := wait/2 + rand.N(wait/2+1) //nolint:gosec // G404: jitter, not a secret
		w.Log.Warn("temporal worker not started; retrying", "task_queue", w.TaskQueue,
			"attempt", attempt, "retry_in", d.Round(time.Millisecond).String(), "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
		wait = min(2*wait, maxB)
	}
}
