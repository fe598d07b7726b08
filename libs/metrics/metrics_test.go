package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
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
	go func() { done <- ServeAdmin(ctx, addr, reg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()

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
