package jobapp

import "github.com/prometheus/client_golang/prometheus"

// writes counts job writes by outcome: created, updated, replayed (an
// Idempotency-Key answered from the stored response), unpublished and
// already_unpublished; a batch's rows also unchanged, closed and error.
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

// registerTotals exports how the listings' totals were found: from a memo
// (docs/search.md, "Totals") or counted.
func registerTotals(reg prometheus.Registerer, bus interface{ TotalCounts() (int64, int64) }) {
	if reg == nil || bus == nil {
		return
	}
	for _, o := range []struct {
		outcome string
		read    func() float64
	}{
		{"memo", func() float64 { h, _ := bus.TotalCounts(); return float64(h) }},
		{"counted", func() float64 { _, m := bus.TotalCounts(); return float64(m) }},
	} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "jobs_list_totals_total",
			Help:        "Totals of paginated job listings by how they were found: memo (kept under the change versions) or counted.",
			ConstLabels: prometheus.Labels{"outcome": o.outcome},
		}, o.read))
	}
}
