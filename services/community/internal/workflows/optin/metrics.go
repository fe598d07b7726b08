package optin

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the opt-in outcomes the activities bring about. A nil
// *Metrics counts nothing.
type Metrics struct{ outcomes *prometheus.CounterVec }

// NewMetrics registers the counters on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "newsletter_optin_outcomes_total",
		Help: "Newsletter double opt-ins by outcome (confirmed: subscribed; timed_out: the pending record was removed unconfirmed).",
	}, []string{"outcome"})}
	reg.MustRegister(m.outcomes)
	m.outcomes.WithLabelValues("confirmed")
	m.outcomes.WithLabelValues("timed_out")
	return m
}

func (m *Metrics) inc(outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(outcome).Inc()
	}
}
