package tests

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// jobsBackend answers GET /v2/jobs/{id} as the jobs service does for a
// space key: job 1 is space 5's, job 2 a draft of space 6 (unknown to any
// other space), any other id does not exist. The feeds answer as the real
// backends do, with their own ETag (web.SendCacheable).
func jobsBackend(t *testing.T, served *atomic.Int64) string {
	t.Helper()
	return signedBackend(t, "jobs", func(c *fiber.Ctx) error {
		c.Set(echoHeader, "jobs") // not the API's answers: not contract-checked
		served.Add(1)
		if strings.HasPrefix(c.Path(), "/v2/vine/") {
			return web.SendCacheable(c, fiber.Map{"feed": c.Path()}, 60)
		}
		space := identity.From(c).SpaceID
		switch c.Path() {
		case "/v2/jobs/1":
			return web.OK(c, http.StatusOK, fiber.Map{"id_job": 1, "space": 5})
		case "/v2/jobs/2":
			if space == 6 {
				return web.OK(c, http.StatusOK, fiber.Map{"id_job": 2, "space": 6, "status": "draft"})
			}
		}
		return web.NotFound("Job not found")
	})
}

// If-None-Match: * matches only an answer that exists and that the key may
// read: the gateway cannot tell that from its versions, so the request is
// forwarded, authorised and counted like one without a validator, and only
// its 200 (or a kept one, given to this key at these versions) becomes a 304.
func TestIfNoneMatchAnyIsAuthorised(t *testing.T) {
	for _, store := range []string{responsecache.StoreMemory, responsecache.StoreRedis} {
		t.Run(store, func(t *testing.T) { testIfNoneMatchAny(t, store) })
	}
}

func testIfNoneMatchAny(t *testing.T, store string) {
	ctx := context.Background()
	var served atomic.Int64
	g := startGateway(t, gatewayOpts{readLimit: 6, cacheBytes: 1 << 20, cacheStore: store, backendURL: jobsBackend(t, &served)})
	rdb, err := redisx.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	if err := changes.New(rdb, g.prefix).Ensure(ctx, scopes.Jobs); err != nil {
		t.Fatal(err)
	}
	_, spaceKey := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}, SpaceID: 5})
	get := func(path string, extra ...string) response {
		t.Helper()
		hdr := map[string]string{"X-API-Key": spaceKey, echoHeader: "1"}
		for i := 0; i+1 < len(extra); i += 2 {
			hdr[extra[i]] = extra[i+1]
		}
		return do(t, "GET", g.base+path, "", hdr)
	}
	remaining := func(r response) string { return r.header.Get("X-RateLimit-Remaining") }

	if r := get("/v2/jobs/999", "If-None-Match", "*"); r.status != 404 || remaining(r) != "5" {
		t.Fatalf("a job that does not exist with If-None-Match *: %d, remaining %q (want 404, 5)", r.status, remaining(r))
	}
	plain := get("/v2/jobs/2")
	if r := get("/v2/jobs/2", "If-None-Match", "*"); r.status != plain.status || r.status != 404 || remaining(r) != "3" {
		t.Fatalf("another space's draft with If-None-Match *: %d (without a validator %d), remaining %q (want 3)",
			r.status, plain.status, remaining(r))
	}
	before := served.Load()
	r := get("/v2/jobs/1", "If-None-Match", "*")
	etag := r.header.Get("ETag")
	if r.status != 304 || len(r.raw) != 0 || etag == "" || remaining(r) != "2" || served.Load() != before+1 {
		t.Fatalf("own job with If-None-Match *: %d %q ETag %q, remaining %q (want 304, 2), backend served %d (want 1)",
			r.status, r.raw, etag, remaining(r), served.Load()-before)
	}
	if own := get("/v2/jobs/1"); own.status != 200 || own.header.Get("ETag") != etag || remaining(own) != "1" {
		t.Fatalf("own job: %d ETag %q (want %q), remaining %q", own.status, own.header.Get("ETag"), etag, remaining(own))
	}
	// Each * spends the read budget, as a request without a validator does.
	if r := get("/v2/jobs/1", "If-None-Match", "*"); r.status != 304 || r.header.Get("ETag") != etag || remaining(r) != "0" {
		t.Fatalf("6th read: %d ETag %q remaining %q", r.status, r.header.Get("ETag"), remaining(r))
	}
	if r := get("/v2/jobs/1", "If-None-Match", "*"); r.status != 429 {
		t.Fatalf("7th read, over the budget: %d, want 429", r.status)
	}
	// A client holding the current answer still spends nothing on its 304.
	if r := get("/v2/jobs/1", "If-None-Match", etag); r.status != 304 || r.header.Get("ETag") != etag {
		t.Fatalf("If-None-Match with the current ETag over the budget: %d ETag %q", r.status, r.header.Get("ETag"))
	}
}

// The feeds' backends name their answers too (web.SendCacheable); where the
// gateway names an answer its ETag replaces the backend's, whatever the
// case of the header's name, so the client gets one validator, which a
// conditional request then matches.
func TestFeedsSendOneETag(t *testing.T) {
	ctx := context.Background()
	var served atomic.Int64
	g := startGateway(t, gatewayOpts{cacheBytes: 1 << 20, backendURL: jobsBackend(t, &served)})
	rdb, err := redisx.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	if err := changes.New(rdb, g.prefix).Ensure(ctx, scopes.Jobs, scopes.Events, scopes.Blog); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v2/vine/jobs", "/v2/vine/events", "/v2/vine/blog"} {
		for _, attempt := range []string{"miss", "hit"} {
			r := do(t, "GET", g.base+path, "", map[string]string{echoHeader: "1"})
			etags := r.header.Values("Etag") // net/http folds ETag and Etag into one key
			if r.status != 200 || len(etags) != 1 || !strings.HasPrefix(etags[0], `W/"`) {
				t.Fatalf("%s (%s): %d, ETag headers %q, want one", path, attempt, r.status, etags)
			}
			nm := do(t, "GET", g.base+path, "", map[string]string{echoHeader: "1", "If-None-Match": etags[0]})
			if nm.status != 304 || len(nm.header.Values("Etag")) != 1 || nm.header.Get("ETag") != etags[0] {
				t.Fatalf("%s with If-None-Match %s: %d, ETag headers %q", path, etags[0], nm.status, nm.header.Values("Etag"))
			}
		}
	}
}
