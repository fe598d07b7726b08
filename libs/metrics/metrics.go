// Package metrics holds a service's Prometheus registry, the HTTP RED
// middleware and the admin server that exposes /metrics and the probes on a
// port of its own, away from client traffic.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Metrics is one service's registry plus the HTTP instruments.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New registers the Go runtime, process and HTTP collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests answered, by route template, method and status class.",
		}, []string{"route", "method", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route template, method and status class.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method", "status_class"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

var statusClasses = [...]string{"1xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

// Middleware records every request under its route template (never the raw
// path: ids would make the label set unbounded).
func (m *Metrics) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		status := web.Status(c, err)
		class := "5xx"
		if i := status / 100; i >= 1 && i <= 5 {
			class = statusClasses[i]
		}
		method := web.MethodLabel(c)
		route := web.RouteTemplate(c)
		m.requests.WithLabelValues(route, method, class).Inc()
		m.duration.WithLabelValues(route, method, class).Observe(time.Since(start).Seconds())
		return err
	}
}

// Check is one readiness dependency of a process served by ServeAdmin.
type Check func(ctx context.Context) error

// AdminOption adds to what ServeAdmin answers.
type AdminOption func(*http.ServeMux, *slog.Logger)

// WithReadiness makes the admin port answer /readyz: 200 while every check
// passes, 503 naming the failed ones otherwise. It is the readiness probe of
// processes without an API port (the workers: a worker that cannot reach
// Temporal or its database is not ready, and the rollout waits for it).
func WithReadiness(checks map[string]Check) AdminOption {
	return func(mux *http.ServeMux, _ *slog.Logger) {
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			var down []string
			for name, check := range checks {
				if err := check(ctx); err != nil {
					down = append(down, name+": down\n")
				}
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if len(down) > 0 {
				sort.Strings(down)
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(strings.Join(down, "")))
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
	}
}

// ServeAdmin runs /metrics and /livez (and /readyz WithReadiness) on addr
// until ctx ends. "off" (or an empty addr) disables it; an empty environment
// variable falls back to the default port, so "off" is the way to say it.
// pprof is not here: the admin port is scraped through a Service, and
// profiles (which expose memory contents and cost CPU) get a port of their
// own, off by default (web.ServePprof).
func ServeAdmin(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger, opts ...AdminOption) error {
	if addr == "" || addr == "off" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Liveness: the process is up and still serving. It lives here, not on
	// the API port, so that a saturated API (connections waiting behind the
	// cap) is not restarted by its probe.
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	for _, opt := range opts {
		opt(mux, log)
	}
	return web.ServeHandler(ctx, "admin", addr, mux, log)
}
