// Package memstore keeps the response cache's answers in the gateway
// replica's own memory, bounded in bytes (otter's weighted S3-FIFO): a hit
// costs no round trip and no copy of the body. The price is one miss per
// replica per version, and the answers in the gateway's heap, doubled by the
// GC's headroom (make bench -rows cache -cache-store memory).
package memstore

import (
	"context"

	"github.com/maypok86/otter/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
)

// Store implements responsecache.Storer in memory.
type Store struct {
	entries *otter.Cache[uint64, *responsecache.Answer]
}

// New returns a store holding at most maxBytes of answers; reg receives its
// instruments (nil: none).
func New(maxBytes uint64, reg *prometheus.Registry) *Store {
	s := &Store{entries: otter.Must(&otter.Options[uint64, *responsecache.Answer]{
		MaximumWeight: maxBytes,
		Weigher: func(_ uint64, a *responsecache.Answer) uint32 {
			return uint32(len(a.Name) + len(a.ContentType) + len(a.Body) + 96)
		},
	})}
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gateway_response_cache_bytes",
			Help: "Bytes of answers held by the response cache (the weight otter counts; memory store).",
		}, func() float64 { return float64(s.entries.WeightedSize()) }))
	}
	return s
}

// ReadsWithVersions is false: the entries are at hand.
func (s *Store) ReadsWithVersions() bool { return false }

// Get returns the answer named r.Name, if kept.
func (s *Store) Get(_ context.Context, r *responsecache.Request) (*responsecache.Answer, bool) {
	a, ok := s.entries.GetIfPresent(r.ID)
	if !ok || a.Name != r.Name {
		return nil, false
	}
	return a, true
}

// Put keeps body without copying it: the caller gives it up, and a hit sends
// it as a raw body, which fasthttp never writes to.
func (s *Store) Put(r *responsecache.Request, contentType string, body []byte) {
	s.entries.Set(r.ID, &responsecache.Answer{Name: r.Name, ContentType: contentType, Body: body})
}
