package pg

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exposes pgxpool statistics (pool.Stat()) as Prometheus
// metrics, read at scrape time. Register one per pool.
type PoolCollector struct {
	pool  *pgxpool.Pool
	descs []poolMetric
}

type poolMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*pgxpool.Stat) float64
}

// NewPoolCollector returns the collector of pool.
func NewPoolCollector(pool *pgxpool.Pool) *PoolCollector {
	gauge := func(name, help string, f func(*pgxpool.Stat) float64) poolMetric {
		return poolMetric{prometheus.NewDesc("pgxpool_"+name, help, nil, nil), prometheus.GaugeValue, f}
	}
	counter := func(name, help string, f func(*pgxpool.Stat) float64) poolMetric {
		return poolMetric{prometheus.NewDesc("pgxpool_"+name, help, nil, nil), prometheus.CounterValue, f}
	}
	return &PoolCollector{pool: pool, descs: []poolMetric{
		gauge("acquired_connections", "Connections currently checked out of the pool.",
			func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }),
		gauge("idle_connections", "Idle connections in the pool.",
			func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }),
		gauge("constructing_connections", "Connections being established.",
			func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }),
		gauge("total_connections", "Open connections (acquired, idle and constructing).",
			func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }),
		gauge("max_connections", "The pool's size limit.",
			func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }),
		counter("acquires_total", "Successful connection acquisitions.",
			func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }),
		counter("acquire_duration_seconds_total", "Time spent acquiring connections, waiting included.",
			func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }),
		counter("empty_acquires_total", "Acquisitions that waited because no connection was idle.",
			func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }),
		counter("empty_acquire_wait_seconds_total", "Time spent waiting for a connection when none was idle.",
			func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }),
		counter("canceled_acquires_total", "Acquisitions cancelled by their context (usually a request deadline).",
			func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }),
		counter("new_connections_total", "Connections opened.",
			func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }),
		counter("max_lifetime_destroys_total", "Connections closed for reaching their maximum lifetime.",
			func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }),
		counter("max_idle_destroys_total", "Connections closed for idling too long.",
			func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }),
	}}
}

// Describe implements prometheus.Collector.
func (p *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range p.descs {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (p *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	st := p.pool.Stat()
	for _, m := range p.descs {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(st))
	}
}
