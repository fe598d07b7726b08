package tests

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// A backend restarted behind the gateway (a rolling deploy) leaves the
// gateway's pooled connections to the old process dead. The next requests
// are answered by the new process, not with 503: the first failure drops every
// idle connection and the retry dials. (With dead connections pooled, the
// first request tried five of them, fasthttp's attempts, and gave up.)
func TestBackendRestartIsInvisibleToClients(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, _ := strconv.Atoi(r.URL.Query().Get("sleep_ms")); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		w.Header().Set(echoHeader, "restarting")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"success":true,"status":200,"data":{}}`))
	})
	serve := func(ln net.Listener) *http.Server {
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		return srv
	}
	old := serve(ln)

	g := startGateway(t, gatewayOpts{backendURL: "http://" + addr})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	hdr := map[string]string{"X-API-Key": raw}
	// 20 requests at once leave 20 connections to the old process in the pool.
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := do(t, "GET", g.base+"/v2/jobs?sleep_ms=100", "", hdr); r.status != 200 {
				t.Errorf("before the restart: %d %s", r.status, r.raw)
			}
		}()
	}
	wg.Wait()

	_ = old.Close() // closes its listener and every connection
	var next net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; {
		if next, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv := serve(next)
	t.Cleanup(func() { _ = srv.Close() })

	for i := range 5 {
		if r := do(t, "GET", g.base+"/v2/jobs", "", hdr); r.status != 200 {
			t.Fatalf("request %d after the restart: %d %s", i+1, r.status, r.raw)
		}
	}
}
