// Package metrics holds a service's Prometheus registry, the HTTP RED
// middleware and the admin server that exposes /metrics and pprof on a port of
// its own, away from client traffic.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
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
		status := c.Response().StatusCode()
		if err != nil {
			status = web.Classify(err).Status
		}
		class := "5xx"
		if i := status / 100; i >= 1 && i <= 5 {
			class = statusClasses[i]
		}
		method := c.Method()
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS":
		default:
			method = "OTHER"
		}
		route := web.RouteTemplate(c)
		m.requests.WithLabelValues(route, method, class).Inc()
		m.duration.WithLabelValues(route, method, class).Observe(time.Since(start).Seconds())
		return err
	}
}

// ServeAdmin runs /metrics and /debug/pprof on addr until ctx ends. "off" (or
// an empty addr) disables it; an empty environment variable falls back to the
// default port, so "off" is the way to say it.
func ServeAdmin(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger) error {
	if addr == "" || addr == "off" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// The liveness probe of processes without an API port (the workers): the
	// process is up and still serving.
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen admin %s: %w", addr, err)
	}
	log.Info("admin server started", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		// ctx is already done here; the shutdown gets its own deadline.
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve admin: %w", err)
	}
	return nil
}
