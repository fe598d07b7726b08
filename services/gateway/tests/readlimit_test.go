package tests

import (
	"strconv"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Keyed reads have their own budget per key, apart from writes; the answer
// over it is the spec's 429 with its details.
func TestReadLimitPerKey(t *testing.T) {
	g := startGateway(t, gatewayOpts{readLimit: 5, writeLimit: 3})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	_, other := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	hdr := map[string]string{"X-API-Key": raw}
	paths := []string{"/v2/jobs", "/v2/cities", "/v2/spaces", "/v2/city_spaces", "/v2/events"}
	for i, p := range paths { // every keyed GET shares the key's read budget
		r := do(t, "GET", g.base+p, "", hdr)
		if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("read %d %s: %d limit headers %q/%q", i+1, p, r.status, r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
		}
	}
	r := do(t, "GET", g.base+"/v2/jobs", "", hdr)
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("6th read: %d %s", r.status, r.raw)
	}
	if d := details(t, r); d.LimitPerMinute != 5 || d.RetryAfterSeconds < 1 {
		t.Fatalf("details %+v", d)
	}
	// Writes still have their whole budget, and another key its own reads.
	if r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr); r.status != 201 || r.header.Get("X-RateLimit-Limit") != "3" {
		t.Fatalf("write after reads ran out: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": other}); r.status != 200 {
		t.Fatalf("another key: %d", r.status)
	}
}

// Public GETs served by a backend (feeds, blog, newsletter links) are
// limited per client IP; the gateway's own documents are not.
func TestPublicReadLimitPerIP(t *testing.T) {
	g := startGateway(t, gatewayOpts{publicRead: 3})
	for i, p := range []string{"/v2/vine/jobs", "/v2/blog", "/v2/vine/events"} {
		if r := do(t, "GET", g.base+p, "", nil); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("public read %d: %d remaining %q", i+1, r.status, r.header.Get("X-RateLimit-Remaining"))
		}
	}
	if r := do(t, "GET", g.base+"/v2/vine/blog", "", nil); r.status != 429 {
		t.Fatalf("4th public read: %d %s", r.status, r.raw)
	}
	for range 5 {
		if r := do(t, "GET", g.base+"/v2", "", nil); r.status != 200 {
			t.Fatalf("GET /v2 limited: %d", r.status)
		}
	}
}

// 0 turns the read limits off: no budget is counted, and GET /v2 says so.
func TestReadLimitsOff(t *testing.T) {
	g := startGateway(t, gatewayOpts{readLimit: -1, publicRead: -1})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": raw})
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("read with limits off: %d limit %q", r.status, r.header.Get("X-RateLimit-Limit"))
	}
	var info struct {
		Routes []struct {
			Method      string `json:"method"`
			Path        string `json:"path"`
			RateLimited bool   `json:"rate_limited"`
		} `json:"routes"`
	}
	do(t, "GET", g.base+"/v2", "", nil).data(t, &info)
	for _, rt := range info.Routes {
		// Every POST, PATCH and DELETE keeps its write or spam budget, except
		// Stripe's webhook, which Stripe signs and which has no budget (routes.go).
		if want := rt.Method != "GET" && rt.Path != "/v2/payments/stripe/webhook"; rt.RateLimited != want {
			t.Fatalf("%s %s rate_limited=%v with read limits off", rt.Method, rt.Path, rt.RateLimited)
		}
	}
}
