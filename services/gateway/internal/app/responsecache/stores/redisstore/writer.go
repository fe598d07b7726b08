package redisstore

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/changes"
)

// entryWriter writes the shared store's entries off the requests' path: a
// miss queues its answer and goes on, and one goroutine writes whatever has
// queued in one pipeline. A full queue drops the entry (the next request
// misses again) rather than holding a request or growing the heap.
type entryWriter struct {
	v       *changes.Versions
	ttl     time.Duration
	q       chan changes.Entry
	written *prometheus.CounterVec
	skipped prometheus.Counter // answers not kept: asked for once so far (doorkeeper)
}

// entryQueue bounds the entries waiting: at most this many answers (each at
// most the cache's largest) are held in the heap at once.
const entryQueue = 256

func newEntryWriter(v *changes.Versions, ttl time.Duration, reg *prometheus.Registry) *entryWriter {
	w := &entryWriter{v: v, ttl: ttl, q: make(chan changes.Entry, entryQueue),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_writes_total",
			Help: "Answers for the shared response cache (redis store) by outcome: written, dropped (queue full), failed (Redis), first_request (not kept: the first time this replica forwarded its request).",
		}, []string{"outcome"})}
	w.skipped = w.written.WithLabelValues("first_request")
	if reg != nil {
		reg.MustRegister(w.written)
	}
	return w
}

func (w *entryWriter) put(id string, value []byte) {
	select {
	case w.q <- changes.Entry{ID: id, Value: value, TTL: w.ttl}:
	default:
		w.written.WithLabelValues("dropped").Inc()
	}
}

// run writes queued entries until ctx ends.
func (w *entryWriter) run(ctx context.Context) {
	batch := make([]changes.Entry, 0, 64)
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-w.q:
			batch = append(batch[:0], e)
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case e := <-w.q:
				batch = append(batch, e)
			default:
				break fill
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		outcome := "written"
		if err := w.v.WriteEntries(wctx, batch); err != nil {
			outcome = "failed"
		}
		cancel()
		w.written.WithLabelValues(outcome).Add(float64(len(batch)))
		clear(batch) // the answers go to the GC now, not with the next batch
	}
}
