package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// dnsRig is a gateway front whose jobs backend is balanced by DNS over
// backends listening on 127.0.0.x with one shared port (as a headless
// Service's pods all listen on the target port). The resolver is the one
// seam: answers come from names, so the test sets them; everything after the
// lookup (dials, pools, requests) is real.
type dnsRig struct {
	port    string
	counts  sync.Map // address -> *atomic.Int64
	answer  atomic.Pointer[[]string]
	lookErr atomic.Pointer[error]
	backend *Backend
	front   string
}

func newDNSRig(t *testing.T, live ...string) *dnsRig {
	t.Helper()
	r := &dnsRig{}
	for i, ip := range live {
		addr := ip + ":0"
		if i > 0 {
			addr = net.JoinHostPort(ip, r.port)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen on %s: %v", addr, err)
		}
		_, r.port, _ = net.SplitHostPort(ln.Addr().String())
		n := &atomic.Int64{}
		r.counts.Store(ip, n)
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		reply := func(c *fiber.Ctx) error {
			n.Add(1)
			return c.SendString(`{"success":true,"status":200,"data":{}}`)
		}
		app.Get("/v2/jobs", reply)
		app.Post("/v2/jobs", reply)
		go func() { _ = app.Listener(ln) }()
		t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	}
	r.setAnswer(live...)
	lookup := func(_ context.Context, host string) ([]string, error) {
		if host != "jobs-headless" {
			return nil, fmt.Errorf("unexpected host %q", host)
		}
		if e := r.lookErr.Load(); e != nil {
			return nil, *e
		}
		return *r.answer.Load(), nil
	}
	b, err := NewBackend("jobs", "http://jobs-headless:"+r.port, BackendOptions{
		Timeout: 5 * time.Second, MaxConns: 8, Balance: BalanceDNS, ResolveEvery: time.Hour, lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	r.backend = b
	r.front = front(t, b)
	return r
}

func (r *dnsRig) setAnswer(ips ...string) { r.answer.Store(&ips) }

func (r *dnsRig) count(ip string) int64 {
	if n, ok := r.counts.Load(ip); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// send makes n requests over workers connections and fails the test on any
// answer but 200.
func (r *dnsRig) send(t *testing.T, method string, n, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	per := n / workers
	for range workers {
		wg.Go(func() {
			for range per {
				req, _ := http.NewRequest(method, "http://"+r.front+"/v2/jobs", strings.NewReader(`{}`))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("%s: %d %s", method, resp.StatusCode, body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every address gets its share of the requests, though one client sends
// them all on one connection: the balancing is per request. An idle set
// goes round-robin, so sequential requests split exactly; concurrent ones go
// to the address with the fewest in flight, which starves none.
func TestDNSBalanceSpreadsRequests(t *testing.T) {
	ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	r := newDNSRig(t, ips...)
	if got := r.backend.Endpoints(); got != 3 {
		t.Fatalf("Endpoints() = %d, want 3", got)
	}
	r.send(t, http.MethodGet, 300, 1)
	for _, ip := range ips {
		if n := r.count(ip); n < 99 || n > 101 {
			t.Errorf("%s served %d of 300 sequential requests, want 100", ip, n)
		}
	}
	r.send(t, http.MethodGet, 600, 6)
	for _, ip := range ips {
		if n := r.count(ip) - 100; n < 50 { // even share is 200
			t.Errorf("%s served %d of 600 concurrent requests, want at least 50", ip, n)
		}
	}
}

// An address added by a later resolve (a replica the HPA started) gets its
// share of the very next requests; one that is gone gets none.
func TestDNSBalanceFollowsTheAnswer(t *testing.T) {
	r := newDNSRig(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	r.setAnswer("127.0.0.1", "127.0.0.2")
	r.backend.set.refresh(context.Background())
	r.send(t, http.MethodGet, 60, 2)
	if n := r.count("127.0.0.3"); n != 0 {
		t.Fatalf("127.0.0.3 served %d requests before it was listed", n)
	}
	r.setAnswer("127.0.0.1", "127.0.0.2", "127.0.0.3")
	r.backend.set.refresh(context.Background())
	r.send(t, http.MethodGet, 90, 1)
	if n := r.count("127.0.0.3"); n < 29 || n > 31 {
		t.Fatalf("the added address served %d of the next 90 requests, want 30", n)
	}
	r.setAnswer("127.0.0.2", "127.0.0.3")
	r.backend.set.refresh(context.Background())
	before := r.count("127.0.0.1")
	r.send(t, http.MethodGet, 60, 3)
	if n := r.count("127.0.0.1") - before; n != 0 {
		t.Fatalf("127.0.0.1 served %d requests after it left the answer", n)
	}
}

// A listed address that refuses connections (a pod that stopped before DNS
// forgot it) costs no request, a POST included (nothing was sent), and is
// skipped until a resolve lists it again.
func TestDNSBalanceSkipsRefusedAddresses(t *testing.T) {
	r := newDNSRig(t, "127.0.0.1", "127.0.0.2")
	// 127.0.0.9 has no listener on the port.
	r.setAnswer("127.0.0.1", "127.0.0.2", "127.0.0.9")
	r.backend.set.refresh(context.Background())
	r.send(t, http.MethodPost, 30, 3)
	r.send(t, http.MethodGet, 30, 3)
	if got := r.count("127.0.0.1") + r.count("127.0.0.2"); got != 60 {
		t.Fatalf("live addresses served %d of 60 requests", got)
	}
	for _, e := range r.backend.set.list() {
		if want := strings.HasPrefix(e.addr, "127.0.0.9:"); e.refused.Load() != want {
			t.Errorf("%s refused = %v, want %v", e.addr, e.refused.Load(), want)
		}
	}
}

// A name that no longer exists (a headless Service without a ready pod)
// empties the set and the route answers 503 in the envelope; a failing
// resolver keeps the last answer.
func TestDNSBalanceWithoutAddresses(t *testing.T) {
	r := newDNSRig(t, "127.0.0.1")
	failing := errors.New("i/o timeout")
	r.lookErr.Store(&failing)
	r.backend.set.refresh(context.Background())
	if got := r.backend.Endpoints(); got != 1 {
		t.Fatalf("after a failed resolve Endpoints() = %d, want the last answer's 1", got)
	}
	r.send(t, http.MethodGet, 4, 1)

	var gone error = &net.DNSError{Err: "no such host", Name: "jobs-headless", IsNotFound: true}
	r.lookErr.Store(&gone)
	r.backend.set.refresh(context.Background())
	if got := r.backend.Endpoints(); got != 0 {
		t.Fatalf("after NXDOMAIN Endpoints() = %d, want 0", got)
	}
	resp, err := http.Get("http://" + r.front + "/v2/jobs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"service_unavailable"`) {
		t.Fatalf("without addresses: %d %s", resp.StatusCode, body)
	}
}

func TestNewBackendRejectsUnknownBalance(t *testing.T) {
	if _, err := NewBackend("jobs", "http://jobs:8080", BackendOptions{Timeout: time.Second, MaxConns: 1, Balance: "random"}); err == nil {
		t.Fatal("an unknown balance mode was accepted")
	}
	if _, err := NewBackend("jobs", "http://jobs:8080", BackendOptions{Timeout: time.Second, MaxConns: 1, Balance: BalanceDNS}); err == nil {
		t.Fatal("BalanceDNS without a resolve interval was accepted")
	}
}
