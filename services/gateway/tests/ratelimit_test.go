package tests

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

type limitDetails struct {
	LimitPerMinute    int `json:"limit_per_minute"`
	RetryAfterSeconds int `json:"retry_after_seconds"`
}

func details(t *testing.T, r response) limitDetails {
	t.Helper()
	if r.env.Error == nil || r.env.Error.Code != "rate_limit_exceeded" {
		t.Fatalf("want rate_limit_exceeded: %s", r.raw)
	}
	m, ok := r.env.Error.Details.(map[string]any)
	if !ok {
		t.Fatalf("details is not an object: %s", r.raw)
	}
	var d limitDetails
	for k, v := range map[string]*int{"limit_per_minute": &d.LimitPerMinute, "retry_after_seconds": &d.RetryAfterSeconds} {
		f, ok := m[k].(float64)
		if !ok || f != float64(int(f)) {
			t.Fatalf("%s is not an integer: %v", k, m[k])
		}
		*v = int(f)
	}
	return d
}

func TestWriteLimit121stIs429(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	hdr := map[string]string{"X-API-Key": raw}
	// Reads are not counted against the write budget.
	for range 30 {
		if r := do(t, "GET", g.base+"/v2/jobs", "", hdr); r.status != 200 {
			t.Fatalf("read: %d", r.status)
		}
	}
	for i := 1; i <= 120; i++ {
		path := "/v2/jobs"
		if i%2 == 0 {
			path = "/v2/jobs/unpublish" // both writes share one budget
		}
		r := do(t, "POST", g.base+path, `{}`, hdr)
		if r.status != 201 {
			t.Fatalf("write %d: %d %s", i, r.status, r.raw)
		}
		if r.header.Get("X-RateLimit-Limit") != "120" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(120-i) {
			t.Fatalf("write %d: limit headers %q/%q", i, r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
		}
	}
	r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
	if r.status != 429 {
		t.Fatalf("121st write: %d", r.status)
	}
	d := details(t, r)
	if d.LimitPerMinute != 120 || d.RetryAfterSeconds < 1 || d.RetryAfterSeconds > 60 {
		t.Fatalf("details %+v", d)
	}
	if r.header.Get("Retry-After") != strconv.Itoa(d.RetryAfterSeconds) || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("Retry-After %q, remaining %q", r.header.Get("Retry-After"), r.header.Get("X-RateLimit-Remaining"))
	}
	// Reads still pass while writes are limited.
	if r := do(t, "GET", g.base+"/v2/jobs", "", hdr); r.status != 200 {
		t.Fatalf("read while write-limited: %d", r.status)
	}
	// Another key has its own budget.
	_, other := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	if r := do(t, "POST", g.base+"/v2/jobs", `{}`, map[string]string{"X-API-Key": other}); r.status != 201 {
		t.Fatalf("other key: %d", r.status)
	}
}

func TestPerKeyOverride(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"jobs:write"}, RateLimitPerMinute: 5})
	hdr := map[string]string{"X-API-Key": raw}
	for i := range 5 {
		if r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr); r.status != 201 {
			t.Fatalf("write %d: %d", i+1, r.status)
		}
	}
	r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
	if r.status != 429 || details(t, r).LimitPerMinute != 5 {
		t.Fatalf("6th write: %d %s", r.status, r.raw)
	}
}

// A raised write budget (an importer's) is leased from Redis a few units at
// a time; on one gateway the client still sees it exactly: Remaining counts
// down one by one and the write past the budget is refused.
func TestRaisedWriteBudgetIsExact(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"jobs:write"}, RateLimitPerMinute: 500}) // leases of 5
	hdr := map[string]string{"X-API-Key": raw}
	for i := 1; i <= 500; i++ {
		r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
		if r.status != 201 || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(500-i) {
			t.Fatalf("write %d: %d remaining %q", i, r.status, r.header.Get("X-RateLimit-Remaining"))
		}
	}
	r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
	if r.status != 429 || details(t, r).LimitPerMinute != 500 {
		t.Fatalf("501st write: %d %s", r.status, r.raw)
	}
}

// With a short window, a slot frees once the oldest request leaves it, and
// retry_after_seconds says when.
func TestSlotFreesAsWindowSlides(t *testing.T) {
	g := startGateway(t, gatewayOpts{window: 2 * time.Second, writeLimit: 3})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	hdr := map[string]string{"X-API-Key": raw}
	for range 3 {
		if r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr); r.status != 201 {
			t.Fatalf("write: %d", r.status)
		}
	}
	r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
	if r.status != 429 {
		t.Fatalf("4th: %d", r.status)
	}
	d := details(t, r)
	if d.RetryAfterSeconds < 1 || d.RetryAfterSeconds > 2 {
		t.Fatalf("retry after %d, window is 2s", d.RetryAfterSeconds)
	}
	time.Sleep(time.Duration(d.RetryAfterSeconds)*time.Second + 100*time.Millisecond)
	if r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr); r.status != 201 {
		t.Fatalf("after the window slid: %d %s", r.status, r.raw)
	}
}

// Two gateway instances (each with its own limiter and Redis client) on one
// Redis spend one budget: exactly the limit passes between them, even when
// they are hit concurrently.
func TestTwoGatewaysShareOneBudget(t *testing.T) { twoGatewaysShareOneBudget(t, redisURL) }

// twoGatewaysShareOneBudget runs the two instances on the Redis at url; it
// returns them for checks of their logs.
func twoGatewaysShareOneBudget(t *testing.T, url string) (a, b *gateway) {
	backend := startBackend(t, "echo")
	prefix := "test:" + randomHex(6) + ":"
	a = startGateway(t, gatewayOpts{redisURL: url, backendURL: backend, prefix: prefix})
	b = startGateway(t, gatewayOpts{redisURL: url, backendURL: backend, prefix: prefix})
	_, raw := a.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	codes := postConcurrently(t, 150, map[string]string{"X-API-Key": raw}, a.base, b.base)
	if codes[201] != 120 || codes[429] != 30 || len(codes) != 2 {
		t.Fatalf("status counts across both gateways: %v; want 120 × 201 and 30 × 429", codes)
	}
	return a, b
}

func TestPublicPostsLimitedPerIP(t *testing.T) {
	g := startGateway(t, gatewayOpts{publicLimit: 4})
	for i := range 4 {
		if r := do(t, "POST", g.base+"/v2/feedback", `{"message":"hi"}`, nil); r.status != 201 {
			t.Fatalf("post %d: %d", i+1, r.status)
		}
	}
	r := do(t, "POST", g.base+"/v2/feedback", `{"message":"hi"}`, nil)
	if r.status != 429 || details(t, r).LimitPerMinute != 4 {
		t.Fatalf("5th public post: %d %s", r.status, r.raw)
	}
	// Public reads are not limited by it.
	if r := do(t, "GET", g.base+"/v2/blog", "", nil); r.status != 200 {
		t.Fatalf("public read: %d", r.status)
	}
}

// With Redis unreachable the gateway keeps serving, limits writes per
// instance, and health says so.
func TestRedisDownFallsBackToLocalLimit(t *testing.T) {
	g := startGateway(t, gatewayOpts{redisURL: "redis://127.0.0.1:1/0", writeLimit: 5})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	hdr := map[string]string{"X-API-Key": raw}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", g.base+"/v2/jobs", `{}`, hdr)
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[201] != 5 || codes[429] != 3 {
		t.Fatalf("local limiter: %v", codes)
	}
	if r := do(t, "GET", g.base+"/v2/jobs", "", hdr); r.status != 200 {
		t.Fatalf("read with redis down: %d", r.status)
	}
	var h struct {
		Status string `json:"status"`
		Redis  struct {
			Status string `json:"status"`
		} `json:"redis"`
		RateLimiter string `json:"rate_limiter"`
	}
	do(t, "GET", g.base+"/v2/health", "", hdr).data(t, &h)
	if h.Redis.Status != "disconnected" || h.RateLimiter != "local" || h.Status != "degraded" {
		t.Fatalf("health: %+v", h)
	}
}
