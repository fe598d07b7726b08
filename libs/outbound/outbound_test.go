package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestAllowed(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": false, "10.1.2.3": false, "192.168.1.1": false, "172.16.5.4": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fe80::1": false, "fc00::1": false, "::ffff:127.0.0.1": false,
		"224.0.0.1": false, "8.8.8.8": true, "2a00:1450:4001:80b::200e": true, "93.184.216.34": true,
	} {
		if got := Allowed(netip.MustParseAddr(s), nil); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	allow, err := ParseAllow("loopback, 10.0.0.0/8")
	if err != nil || !Allowed(netip.MustParseAddr("127.0.0.1"), allow) || !Allowed(netip.MustParseAddr("10.9.9.9"), allow) ||
		Allowed(netip.MustParseAddr("192.168.0.1"), allow) {
		t.Fatalf("allowlist: %v %v", allow, err)
	}
	if _, err := ParseAllow("10.0.0.0/99"); err == nil {
		t.Fatal("a bad prefix parsed")
	}
}

// The check is at dial time: a literal loopback address and a name that
// resolves to one are refused alike; allowlisted, both go through.
func TestDialRefusesSpecialAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	ctx := context.Background()
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/"} {
		req, _ := http.NewRequest("POST", u, nil)
		if _, err := New(Config{}).Do(ctx, req); !errors.Is(err, ErrRefused) {
			t.Fatalf("%s: %v, want refused", u, err)
		}
		allow, _ := ParseAllow("loopback")
		req, _ = http.NewRequest("POST", u, nil)
		if r, err := New(Config{Allow: allow}).Do(ctx, req); err != nil || r.Status != 200 || string(r.Body) != "ok" {
			t.Fatalf("%s allowlisted: %+v %v", u, r, err)
		}
	}
	req, _ := http.NewRequest("GET", "ftp://example.com/", nil)
	if _, err := New(Config{}).Do(ctx, req); !errors.Is(err, ErrRefused) {
		t.Fatalf("ftp: %v", err)
	}
}

// No redirect is followed, the answer is read to the limit, and a slow
// target ends at the deadline.
func TestLimits(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/big", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(strings.Repeat("x", 200<<10))) })
	mux.HandleFunc("/exact", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte(strings.Repeat("x", DefaultMaxRead)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) { time.Sleep(2 * time.Second) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	allow, _ := ParseAllow("loopback")
	c := New(Config{Allow: allow, Timeout: 500 * time.Millisecond})
	ctx := context.Background()
	req, _ := http.NewRequest("POST", srv.URL+"/redirect", nil)
	if r, err := c.Do(ctx, req); err != nil || r.Status != http.StatusFound {
		t.Fatalf("redirect: %+v %v", r.Status, err)
	}
	req, _ = http.NewRequest("POST", srv.URL+"/big", nil)
	if r, err := c.Do(ctx, req); err != nil || len(r.Body) != DefaultMaxRead || !r.Truncated {
		t.Fatalf("big: %d bytes, truncated %v, %v", len(r.Body), r.Truncated, err)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/exact", nil)
	if r, err := c.Do(ctx, req); err != nil || len(r.Body) != DefaultMaxRead || r.Truncated || r.Header.Get("ETag") != `"v1"` {
		t.Fatalf("exact: %d bytes, truncated %v, ETag %q, %v", len(r.Body), r.Truncated, r.Header.Get("ETag"), err)
	}
	req, _ = http.NewRequest("POST", srv.URL+"/slow", nil)
	start := time.Now()
	if _, err := c.Do(ctx, req); err == nil || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("slow: %v after %v", err, time.Since(start))
	}
}

// What a failed request says names the failure, never this side's network:
// not the resolver that answered, nor the address that was dialled.
func TestDescribeHidesTheNetwork(t *testing.T) {
	t.Parallel()
	c := New(Config{Timeout: 2 * time.Second})
	// A name no resolver knows, and an address the dial refuses.
	for _, u := range []string{"http://no-such-host.invalid/hook", "http://127.0.0.1:9/hook", "http://[::ffff:10.0.0.1]/hook"} {
		req, _ := http.NewRequest(http.MethodPost, u, nil)
		_, err := c.Do(context.Background(), req)
		if err == nil {
			t.Fatalf("%s: no error", u)
		}
		got := Describe(err)
		if strings.ContainsAny(got, "0123456789") || got == "request failed" {
			t.Errorf("%s: %q (from %v)", u, got, err)
		}
	}
	// A resolver's failure carries its server's address; the words don't.
	wrapped := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "hooks.example",
		Server: "10.96.0.10:53"}}
	if got := Describe(wrapped); got != "could not resolve the host" {
		t.Errorf("dns: %q", got)
	}
	for err, want := range map[error]string{
		nil: "", context.DeadlineExceeded: "timed out", errors.New("x509: certificate signed by unknown authority"): "TLS handshake failed",
	} {
		if got := Describe(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

// Registration refuses a literal address in a refused range however it is
// spelled, and only those: names are checked when dialled.
func TestRefusedHost(t *testing.T) {
	t.Parallel()
	loop, err := ParseAllow("loopback")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host    string
		allow   []netip.Prefix
		refused bool
	}{
		{"169.254.169.254", nil, true},
		{"2852039166", nil, true}, // 169.254.169.254 as one decimal
		{"0xa9fea9fe", nil, true}, // and in hex
		{"0251.0376.0251.0376", nil, true},
		{"127.1", nil, true},
		{"0x7f.1", nil, true},
		{"2130706433", nil, true},
		{"10.0.0.1", nil, true},
		{"192.168.1.1", nil, true},
		{"172.16.0.1", nil, true},
		{"::1", nil, true},
		{"[::1]", nil, true},
		{"::ffff:127.0.0.1", nil, true},
		{"::ffff:a9fe:a9fe", nil, true},
		{"fd00::1", nil, true},
		{"fe80::1%eth0", nil, true},
		{"0.0.0.0", nil, true},
		{"0", nil, true},
		{"localhost", nil, true},
		{"api.localhost.", nil, true},
		{"127.0.0.1", loop, false},
		{"localhost", loop, false},
		{"10.0.0.1", loop, true},
		{"93.184.215.14", nil, false},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", nil, false},
		{"example.com", nil, false},
		{"1.2.3.4.5", nil, false},
		{"256.1.1.1", nil, false}, // not an address: a name, checked when dialled
		{"0x100000000", nil, false},
		{"10.example", nil, false},
	} {
		if got := RefusedHost(tc.host, tc.allow); got != tc.refused {
			t.Errorf("RefusedHost(%q, %v) = %v, want %v", tc.host, tc.allow, got, tc.refused)
		}
	}
}
