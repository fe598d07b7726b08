package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The admin server answers the workers' liveness probe and serves the
// registry's metrics, and stops with its context.
func TestServeAdminLivezAndMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // ServeAdmin listens itself

	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "admin_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var temporalDown atomic.Bool
	ready := WithReadiness(map[string]Check{
		"postgres": func(context.Context) error { return nil },
		"temporal": func(context.Context) error {
			if temporalDown.Load() {
				return errors.New("unreachable")
			}
			return nil
		},
	})
	go func() { done <- ServeAdmin(ctx, addr, reg, slog.New(slog.NewTextHandler(io.Discard, nil)), ready) }()

	get := func(path string) (int, string) {
		t.Helper()
		var resp *http.Response
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if resp, err = http.Get("http://" + addr + path); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/livez"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/livez: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "admin_test_total 1") {
		t.Fatalf("/metrics: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/readyz with every check up: %d %q", code, body)
	}
	temporalDown.Store(true)
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || body != "temporal: down\n" {
		t.Fatalf("/readyz with temporal down: %d %q", code, body)
	}
	// Profiles are not on the admin port: it is reachable through a Service.
	if code, _ := get("/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("/debug/pprof/ on the admin port: %d, want 404", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeAdmin: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeAdmin did not stop with its context")
	}
}
