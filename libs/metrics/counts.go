package metrics

import "github.com/prometheus/client_golang/prometheus"

// Counts is a counter with one label whose values are all known up front
// (outcomes, triggers). Each value is exported at 0 from the start, so that
// a rate or an alert over it exists before the first event. A nil *Counts
// counts nothing (tests leave it out).
type Counts struct{ vec *prometheus.CounterVec }

// NewCounts registers the counter name on reg with label's values.
func NewCounts(reg prometheus.Registerer, name, help, label string, values ...string) *Counts {
	c := &Counts{vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})}
	reg.MustRegister(c.vec)
	for _, v := range values {
		c.vec.WithLabelValues(v)
	}
	return c
}

// Add counts n events of value.
func (c *Counts) Add(value string, n int) {
	if c != nil && n > 0 {
		c.vec.WithLabelValues(value).Add(float64(n))
	}
}
