package tests

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// cacheRedis is a database of its own: the versions there move only when
// this test bumps them (the other packages' processes bump database 0's).
const cacheRedis = "redis://127.0.0.1:6379/11"

// countingBackend answers every GET with how many requests it has served
// and the value of data, so a test sees whether an answer came from it and
// whether it is current. ?replica=1 marks the answer as read from a replica,
// ?missing=1 answers 404.
func countingBackend(t *testing.T, served, data *atomic.Int64) string {
	t.Helper()
	return signedBackend(t, "counting", func(c *fiber.Ctx) error {
		c.Set(echoHeader, "counting") // not the API's answers: not contract-checked
		n := served.Add(1)
		if c.Query("replica") == "1" {
			c.Set(web.HeaderReadReplica, "replica")
		}
		if c.Query("missing") == "1" {
			return web.NotFound("nothing here")
		}
		if big := c.Query("big"); big != "" {
			// A streamed answer larger than the proxy reads whole, as an
			// unpaginated list is sent;
			// "broken" stops in the middle, as a stream whose query failed.
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
			c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
				_, _ = fmt.Fprintf(w, `{"success":true,"status":200,"data":{"served":%d,"items":[`, n)
				for i := range 4000 {
					if i > 0 {
						_, _ = w.WriteString(",")
					}
					_, _ = fmt.Fprintf(w, `{"i":%d,"text":"%s"}`, i, strings.Repeat("x", 32))
					if big == "broken" && i == 2000 {
						return
					}
					_ = w.Flush()
				}
				_, _ = w.WriteString(`]}}`)
			})
			return nil
		}
		return web.OK(c, http.StatusOK, fiber.Map{"served": n, "data": data.Load(), "space": identity.From(c).SpaceID})
	})
}

// TestResponseCache runs with each store; the shared one writes its
// entries after the answers (written waits for them where a test needs a
// hit next).
func TestResponseCache(t *testing.T) {
	for _, store := range []string{responsecache.StoreMemory, responsecache.StoreRedis} {
		t.Run(store, func(t *testing.T) { testResponseCache(t, store) })
	}
}

func testResponseCache(t *testing.T, store string) {
	ctx := context.Background()
	rdb, err := redisx.Open(cacheRedis)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var served, data atomic.Int64
	g := startGateway(t, gatewayOpts{redisURL: cacheRedis, readLimit: 1000, publicRead: 1000, cacheBytes: 4 << 20, // keeps answers up to an eighth of it
		cacheStore: store, backendURL: countingBackend(t, &served, &data)})
	// written waits until the shared store has written n entries in all
	// (the memory store keeps each one before the answer is sent).
	written := func(n float64) {
		t.Helper()
		if store != responsecache.StoreRedis {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, _ := g.counter("gateway_response_cache_writes_total", map[string]string{"outcome": "written"})
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("shared store: %v entries written, want %v", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	versions := changes.New(rdb, g.prefix)
	_, platform := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	_, other := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	_, spaceKey := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}, SpaceID: 5})
	key := func(k string, extra ...string) map[string]string {
		h := map[string]string{"X-API-Key": k, echoHeader: "1"}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = extra[i+1]
		}
		return h
	}
	get := func(path string, hdr map[string]string) response {
		t.Helper()
		return do(t, "GET", g.base+path, "", hdr)
	}
	var body struct {
		Served int64 `json:"served"`
		Data   int64 `json:"data"`
	}

	// No writer has made the directory's counter yet: nothing is named.
	r := get("/v2/cities", key(platform))
	if r.status != 200 || r.header.Get("ETag") != "" || served.Load() != 1 {
		t.Fatalf("before any version: %d ETag %q served %d", r.status, r.header.Get("ETag"), served.Load())
	}

	if err := versions.Ensure(ctx, scopes.Directory, scopes.Jobs, scopes.JobsBulk, scopes.Blog); err != nil {
		t.Fatal(err)
	}
	// forwardAgain sends a request the cache forwarded once more where the
	// shared store needs that to keep its answer (it keeps one the second
	// time a replica forwards its request), and returns the last answer;
	// repeats is how many requests that adds.
	repeats := int64(0)
	forwardAgain := func(path string, hdr map[string]string, r response) response {
		t.Helper()
		if store != responsecache.StoreRedis {
			return r
		}
		repeats++
		return get(path, hdr)
	}
	first := get("/v2/cities", key(platform))
	etag := first.header.Get("ETag")
	if first.status != 200 || len(etag) < 5 || etag[:3] != `W/"` || served.Load() != 2 {
		t.Fatalf("first named answer: %d ETag %q served %d", first.status, etag, served.Load())
	}
	if cc, vary := first.header.Get("Cache-Control"), first.header.Get("Vary"); cc != "private, no-cache" || vary == "" {
		t.Fatalf("keyed answer: Cache-Control %q Vary %q", cc, vary)
	}
	first = forwardAgain("/v2/cities", key(platform), first)
	remaining, _ := strconv.Atoi(first.header.Get("X-RateLimit-Remaining"))
	written(1)
	kept := 2 + repeats // requests served when the answer was kept

	// The same request again: the same answer, from the cache.
	again := get("/v2/cities", key(platform))
	if again.status != 200 || again.header.Get("ETag") != etag || served.Load() != kept {
		t.Fatalf("repeat: %d ETag %q served %d\n%s\n%s", again.status, again.header.Get("ETag"), served.Load(), again.raw, first.raw)
	}
	if store == responsecache.StoreMemory && string(again.raw) != string(first.raw) {
		t.Fatalf("repeat: another body\n%s\n%s", again.raw, first.raw)
	}
	remaining--

	// A client holding it: 304, no body, no budget spent, no backend call.
	for range 5 {
		nm := get("/v2/cities", key(platform, "If-None-Match", etag))
		if nm.status != 304 || len(nm.raw) != 0 || nm.header.Get("ETag") != etag || served.Load() != kept {
			t.Fatalf("If-None-Match: %d %q ETag %q served %d", nm.status, nm.raw, nm.header.Get("ETag"), served.Load())
		}
	}
	if nm := get("/v2/cities", key(platform, "If-None-Match", `W/"other", `+etag)); nm.status != 304 {
		t.Fatalf("ETag in a list: %d", nm.status)
	}
	after := get("/v2/cities", key(platform))
	if got, _ := strconv.Atoi(after.header.Get("X-RateLimit-Remaining")); got != remaining-1 {
		t.Fatalf("read budget after six 304s: %d left, want %d (a 304 spends none)", got, remaining-1)
	}

	// HEAD names the answer the same way and sends no body.
	if h := do(t, "HEAD", g.base+"/v2/cities", "", key(platform)); h.status != 200 || h.header.Get("ETag") != etag || len(h.raw) != 0 {
		t.Fatalf("HEAD: %d ETag %q body %d bytes", h.status, h.header.Get("ETag"), len(h.raw))
	}

	// Another key never gets this key's answer or name.
	o := get("/v2/cities", key(other))
	if o.header.Get("ETag") == etag || served.Load() != kept+1 {
		t.Fatalf("another key: ETag %q (first key's %q), served %d", o.header.Get("ETag"), etag, served.Load())
	}
	forwardAgain("/v2/cities", key(other), o)
	written(2)
	if nm := get("/v2/cities", key(other, "If-None-Match", etag)); nm.status != 200 || served.Load() != 3+repeats {
		t.Fatalf("another key with the first key's ETag: %d, served %d (want its own answer from the cache)", nm.status, served.Load())
	}

	// A write to the directory: the next request has a new name and a fresh answer.
	data.Store(42)
	if err := versions.Bump(ctx, scopes.Directory); err != nil {
		t.Fatal(err)
	}
	fresh := get("/v2/cities", key(platform, "If-None-Match", etag))
	fresh.data(t, &body)
	if fresh.status != 200 || fresh.header.Get("ETag") == etag || body.Data != 42 {
		t.Fatalf("after a bump: %d ETag %q (was %q) data %d", fresh.status, fresh.header.Get("ETag"), etag, body.Data)
	}
	// The new answer replaced the old one: a client with the old copy and
	// one without any both get the new one from the cache.
	fresh = forwardAgain("/v2/cities", key(platform), fresh)
	written(3)
	mark := served.Load()
	for _, hdr := range []map[string]string{key(platform, "If-None-Match", etag), key(platform)} {
		var b struct {
			Data int64 `json:"data"`
		}
		r := get("/v2/cities", hdr)
		r.data(t, &b)
		if r.status != 200 || r.header.Get("ETag") != fresh.header.Get("ETag") || b.Data != 42 || served.Load() != mark {
			t.Fatalf("after the new answer was kept: %d ETag %q data %d served %d", r.status, r.header.Get("ETag"), b.Data, served.Load()-mark)
		}
	}
	if store == responsecache.StoreRedis {
		// A request asked for once is not kept in Redis at all; once its
		// request has been forwarded, a new version's answer is kept at once.
		firsts := func() float64 {
			n, _ := g.counter("gateway_response_cache_writes_total", map[string]string{"outcome": "first_request"})
			return n
		}
		before := firsts()
		once := get("/v2/cities?page=7", key(platform))
		if once.status != 200 || firsts() != before+1 {
			t.Fatalf("a request asked for once: %d, first_request %v → %v", once.status, before, firsts())
		}
	}

	// Answers read from a replica, or that are not a 200, are neither named nor kept.
	for _, q := range []string{"replica=1", "missing=1"} {
		before := served.Load()
		for range 2 {
			r := get("/v2/cities?"+q, key(platform))
			if r.header.Get("ETag") != "" || r.header.Get(web.HeaderReadReplica) != "" {
				t.Fatalf("%s: ETag %q, replica header %q leaked", q, r.header.Get("ETag"), r.header.Get(web.HeaderReadReplica))
			}
		}
		if served.Load() != before+2 {
			t.Fatalf("%s: served %d times of 2", q, served.Load()-before)
		}
	}

	// Streamed answers are kept once relayed whole; a stream that broke off is not.
	before := served.Load()
	big1 := get("/v2/jobs?big=1", key(platform))
	relayed := map[string]bool{string(big1.raw): true}
	// It is kept after its last byte has left, which the client may see
	// before the gateway gets to keep it: the next requests may miss (and
	// the shared store keeps it only from the second one on).
	for range 100 {
		mark := served.Load()
		big2 := get("/v2/jobs?big=1", key(platform))
		if served.Load() == mark {
			if !relayed[string(big2.raw)] {
				t.Fatal("a kept streamed answer differs from every one relayed")
			}
			break
		}
		relayed[string(big2.raw)] = true
		time.Sleep(10 * time.Millisecond)
	}
	if big1.status != 200 || len(big1.raw) < 100<<10 || served.Load() > before+3+repeats {
		t.Fatalf("streamed answer: %d, %d bytes, served %d times", big1.status, len(big1.raw), served.Load()-before)
	}
	before = served.Load()
	for range 2 {
		if _, err := http.Get(g.base + "/v2/vine/jobs?big=broken"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // had it been kept, it would be by now
	if _, err := http.Get(g.base + "/v2/vine/jobs?big=broken"); err != nil {
		t.Fatal(err)
	}
	if served.Load() != before+3 {
		t.Fatalf("a broken stream was kept: served %d times of 3", served.Load()-before)
	}

	// A space key's job list moves with its space (and bulk writes), not with
	// every job; a platform key's with every job.
	spaceETag := func() string { return get("/v2/jobs", key(spaceKey)).header.Get("ETag") }
	platformETag := func() string { return get("/v2/jobs", key(platform)).header.Get("ETag") }
	if err := versions.Bump(ctx, scopes.JobsSpace(5)); err != nil {
		t.Fatal(err)
	}
	s1, p1 := spaceETag(), platformETag()
	if s1 == "" || p1 == "" {
		t.Fatalf("job lists not named: space %q platform %q", s1, p1)
	}
	if err := versions.Bump(ctx, scopes.Jobs, scopes.JobsSpace(6)); err != nil { // another space's job
		t.Fatal(err)
	}
	s2, p2 := spaceETag(), platformETag()
	if s2 != s1 || p2 == p1 {
		t.Fatalf("another space's write: space key %q→%q (want same), platform %q→%q (want new)", s1, s2, p1, p2)
	}
	for _, bump := range [][]string{{scopes.Jobs, scopes.JobsSpace(5)}, {scopes.Jobs, scopes.JobsBulk}} {
		if err := versions.Bump(ctx, bump...); err != nil {
			t.Fatal(err)
		}
		if s3 := spaceETag(); s3 == s2 {
			t.Fatalf("bump %v left the space key's ETag %q", bump, s3)
		}
		s2 = spaceETag()
	}

	// Public answers are public.
	if p := get("/v2/blog", map[string]string{echoHeader: "1"}); p.header.Get("Cache-Control") != "public, no-cache" || p.header.Get("ETag") == "" {
		t.Fatalf("public: Cache-Control %q ETag %q", p.header.Get("Cache-Control"), p.header.Get("ETag"))
	}

	// What the metrics say happened.
	for outcome, min := range map[string]float64{"not_modified": 6, "hit": 1, "miss": 3, "bypass": 4, "unversioned": 1} {
		c, err := g.counter("gateway_response_cache_total", map[string]string{"route": "/v2/cities", "outcome": outcome})
		if err != nil {
			t.Fatal(err)
		}
		if c < min {
			t.Errorf("gateway_response_cache_total{/v2/cities,%s} = %v, want at least %v", outcome, c, min)
		}
	}
}

// counter sums the samples of a counter family with these labels.
func (g *gateway) counter(name string, labels map[string]string) (float64, error) {
	mfs, err := g.metrics.Gather()
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
		return sum, nil
	}
	return 0, fmt.Errorf("no metric %s", name)
}

// With Redis unreachable nothing is named or cached, and every request is
// still answered (by the backend, as without the cache).
func TestResponseCacheWithoutRedis(t *testing.T) {
	var served, data atomic.Int64
	g := startGateway(t, gatewayOpts{redisURL: "redis://127.0.0.1:1/0", cacheBytes: 1 << 20,
		backendURL: countingBackend(t, &served, &data)})
	_, k := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	for range 20 {
		r := do(t, "GET", g.base+"/v2/cities", "", map[string]string{"X-API-Key": k, echoHeader: "1"})
		if r.status != 200 || r.header.Get("ETag") != "" {
			t.Fatalf("Redis down: %d ETag %q", r.status, r.header.Get("ETag"))
		}
	}
	if served.Load() != 20 {
		t.Fatalf("backend served %d of 20", served.Load())
	}
	if n, err := g.counter("gateway_response_cache_total", map[string]string{"outcome": "unversioned"}); err != nil || n != 20 {
		t.Fatalf("unversioned: %v %v, want 20", n, err)
	}
}
