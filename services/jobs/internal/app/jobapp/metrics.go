package jobapp

import "github.com/prometheus/client_golang/prometheus"

// writes counts job writes by outcome: created, updated, replayed (an
// Idempotency-Key answered from the stored response), unpublished and
// already_unpublished.
type writes struct{ c *prometheus.CounterVec }

func newWrites(reg prometheus.Registerer) writes {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobs_writes_total",
		Help: "Job writes by outcome (created, updated, replayed, unpublished, already_unpublished).",
	}, []string{"outcome"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return writes{c: c}
}

func (w writes) inc(outcome string) { w.c.WithLabelValues(outcome).Inc() }
