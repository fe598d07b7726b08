package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Structured Field Items of draft-ietf-httpapi-ratelimit-headers: a String
// policy name with integer parameters.
var (
	policyItem = regexp.MustCompile(`^"([a-z_]+)";q=([0-9]+);w=([0-9]+)$`)
	stateItem  = regexp.MustCompile(`^"([a-z_]+)";r=([0-9]+);t=([0-9]+)$`)
)

// Beside X-RateLimit-*, every counted answer (successes, the 429, a
// backend's error) carries the IETF RateLimit-Policy and RateLimit fields for
// the route's budget, with the same numbers; answers no budget counted carry
// none. Browsers may read them (CORS exposes them).
func TestIETFRateLimitHeaders(t *testing.T) {
	g := startGateway(t, gatewayOpts{writeLimit: 3, publicLimit: 2})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	key := map[string]string{"X-API-Key": raw, "Origin": "https://board.example"}
	check := func(r response, name string, quota, remaining int) {
		t.Helper()
		pol, state := r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit")
		pm, sm := policyItem.FindStringSubmatch(pol), stateItem.FindStringSubmatch(state)
		if pm == nil || sm == nil {
			t.Fatalf("%d: RateLimit-Policy %q, RateLimit %q", r.status, pol, state)
		}
		reset, _ := strconv.Atoi(sm[3])
		if pm[1] != name || sm[1] != name || pm[2] != strconv.Itoa(quota) || pm[3] != "60" ||
			sm[2] != strconv.Itoa(remaining) || reset < 1 || reset > 60 {
			t.Fatalf("%d: RateLimit-Policy %q, RateLimit %q; want %q q=%d w=60 r=%d", r.status, pol, state, name, quota, remaining)
		}
		if r.header.Get("X-RateLimit-Limit") != pm[2] || r.header.Get("X-RateLimit-Remaining") != sm[2] || r.header.Get("X-RateLimit-Reset") != sm[3] {
			t.Fatalf("X-RateLimit-* %q/%q/%q disagree with RateLimit %q", r.header.Get("X-RateLimit-Limit"),
				r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Reset"), state)
		}
		exposed := r.header.Get("Access-Control-Expose-Headers")
		if !strings.Contains(exposed, "RateLimit-Policy") || !strings.Contains(exposed, "RateLimit,") {
			t.Fatalf("Access-Control-Expose-Headers %q", exposed)
		}
	}
	for i := 1; i <= 3; i++ {
		r := do(t, "POST", g.base+"/v2/jobs", `{}`, key)
		if r.status != 201 {
			t.Fatalf("write %d: %d", i, r.status)
		}
		check(r, "key_write", 3, 3-i)
	}
	r := do(t, "POST", g.base+"/v2/jobs", `{}`, key)
	if r.status != 429 {
		t.Fatalf("4th write: %d", r.status)
	}
	check(r, "key_write", 3, 0)
	if _, t1, _ := strings.Cut(r.header.Get("RateLimit"), ";t="); t1 != r.header.Get("Retry-After") {
		t.Fatalf("RateLimit %q, Retry-After %q", r.header.Get("RateLimit"), r.header.Get("Retry-After"))
	}
	check(do(t, "GET", g.base+"/v2/jobs", "", key), "key_read", 10000, 9999)
	// A backend's error answer is counted too (the echo backend refuses a non-object body).
	if r := do(t, "POST", g.base+"/v2/feedback", `[]`, key); r.status != 400 {
		t.Fatalf("feedback []: %d", r.status)
	} else {
		check(r, "public_ip", 2, 1)
	}
	for _, tc := range []struct{ path, key string }{{"/v2", ""}, {"/v2/jobs", "svc_live_nope"}} {
		r := do(t, "GET", g.base+tc.path, "", map[string]string{"X-API-Key": tc.key})
		if r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != "" || r.header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("GET %s (%d) counted nothing but carries %q / %q", tc.path, r.status, r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit"))
		}
	}
}
