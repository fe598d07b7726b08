package jobexpiry

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the expiry activities did. A nil *Metrics counts nothing.
type Metrics struct{ expired *prometheus.CounterVec }

// NewMetrics registers the counters on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{expired: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jobs_expired_total",
		Help: "Jobs expired by the expiry worker, by trigger (timer: the job's own workflow; sweep: the periodic sweep).",
	}, []string{"trigger"})}
	reg.MustRegister(m.expired)
	m.expired.WithLabelValues("timer")
	m.expired.WithLabelValues("sweep")
	return m
}

func (m *Metrics) add(trigger string, n int) {
	if m != nil && n > 0 {
		m.expired.WithLabelValues(trigger).Add(float64(n))
	}
}
