package gatewayapp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/maypok86/otter/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Cached says what a GET's answer depends on, so that the gateway can name
// it (ETag) and cache it without running the query behind it: the change
// versions of Scopes (libs/changes), the request (path and query), the key
// (a key's view is its own: its space, its drafts), and for answers that
// change with time alone (a scheduled post, an event that started) the
// current Bucket of that length.
type Cached struct {
	Scopes func(spaceID int64) []string
	Bucket time.Duration
}

func scopes(s ...string) func(int64) []string { return func(int64) []string { return s } }

// responseCache holds whole answers per gateway replica, keyed by the
// answer's name: a write moves the versions, so the next request has a new
// name and nothing is ever invalidated or served stale. Per replica rather
// than in Redis: a hit then costs no round trip and no copy of the body over
// the network (a page of 20 jobs is ~15 KB), and no replica can serve another
// replica's entry under a version it has not read itself; the price is one
// miss per replica per version. Bounded in bytes (otter's weighted
// S3-FIFO), so overload cannot grow it.
type responseCache struct {
	versions *changes.Coalesced
	entries  *otter.Cache[uint64, *cachedAnswer]
	salt     string // the gateway's version: a new release renames every answer
	maxEntry int    // the largest streamed answer kept
	// pauseUntil (unix ns) skips the version reads for a second after one
	// failed: with Redis unreachable each read would wait out its timeout
	// (250 ms) before the request went on uncached.
	pauseUntil atomic.Int64
	outcomes   *prometheus.CounterVec
}

type cachedAnswer struct {
	key         string // everything hashed, to rule out a collision
	contentType string
	body        []byte // never written after it is stored: hits send it without a copy
}

// Cache outcomes, the label of gateway_response_cache_total.
const (
	cacheNotModified = "not_modified" // 304: the client's copy is current
	cacheHit         = "hit"
	cacheMiss        = "miss"        // forwarded and stored
	cacheBypass      = "bypass"      // forwarded, not storable (not a 200, streamed, a replica's)
	cacheUnversioned = "unversioned" // versions unreadable or missing: forwarded, not named
)

func newResponseCache(v *changes.Versions, maxBytes uint64, salt string, reg *prometheus.Registry) *responseCache {
	rc := &responseCache{
		versions: v.Coalesced(), salt: salt,
		// An eighth of the budget, at most 8 MiB: one unpaginated list
		// (~0.7 KB a job) may not push out the many pages.
		maxEntry: int(min(maxBytes/8, 8<<20)),
		entries: otter.Must(&otter.Options[uint64, *cachedAnswer]{
			MaximumWeight: maxBytes,
			Weigher: func(_ uint64, a *cachedAnswer) uint32 {
				return uint32(len(a.key) + len(a.contentType) + len(a.body) + 96)
			},
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_total",
			Help: "Cacheable GETs by route and outcome (not_modified, hit, miss, bypass, unversioned).",
		}, []string{"route", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(rc.outcomes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gateway_response_cache_bytes",
			Help: "Bytes of answers held by the response cache (the weight otter counts).",
		}, func() float64 { return float64(rc.entries.WeightedSize()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gateway_change_version_reads_total",
				Help: "Reads of the change versions (one per cacheable GET while Redis answers).",
			}, func() float64 { r, _ := rc.versions.Counts(); return float64(r) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gateway_change_version_batches_total",
				Help: "Redis MGETs that served those reads: concurrent reads share one (libs/changes.Coalesced).",
			}, func() float64 { _, b := rc.versions.Counts(); return float64(b) }))
	}
	return rc
}

// name computes the answer's key, its hash (the cache's key) and its ETag;
// ok is false when the versions cannot be read (the answer is then neither
// named nor cached). The hash is FNV-1a, not maphash: every gateway replica
// and restart must give the same request the same ETag.
func (rc *responseCache) name(ctx context.Context, c *fiber.Ctx, r Route, id identity.Identity) (key string, sum uint64, etag string, ok bool) {
	now := time.Now().UnixNano()
	if now < rc.pauseUntil.Load() {
		return "", 0, "", false
	}
	var buf [4]uint64
	vs, err := rc.versions.Read(ctx, buf[:0], r.Cache.Scopes(id.SpaceID)...)
	if err != nil {
		if !errors.Is(err, changes.ErrMissing) {
			rc.pauseUntil.Store(now + int64(time.Second))
		}
		return "", 0, "", false
	}
	b := make([]byte, 0, 256)
	b = append(b, rc.salt...)
	b = append(b, 0)
	b = append(b, c.Path()...)
	b = append(b, '?')
	b = append(b, withoutAPIKey(c.Request().URI().QueryString())...)
	b = append(b, 0)
	b = binary.AppendVarint(b, id.KeyID)
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	if r.Cache.Bucket > 0 {
		b = binary.AppendVarint(b, time.Now().UnixNano()/int64(r.Cache.Bucket))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	sum = h.Sum64()
	return string(b), sum, `W/"` + strconv.FormatUint(sum, 36) + `"`, true
}

func (rc *responseCache) get(key string, sum uint64) (*cachedAnswer, bool) {
	a, ok := rc.entries.GetIfPresent(sum)
	if !ok || a.key != key {
		return nil, false
	}
	return a, true
}

// put keeps resp's body without copying it: the body's buffer changes hands
// (SwapBody gives it up), and resp goes on sending it as a raw body, which
// fasthttp never writes to.
func (rc *responseCache) put(key string, sum uint64, resp *fasthttp.Response) {
	body := resp.SwapBody(nil)
	resp.SetBodyRaw(body)
	rc.entries.Set(sum, &cachedAnswer{key: key, contentType: string(resp.Header.ContentType()), body: body})
}

// cacheControl is what clients may do with a named answer: keep it and ask
// again each time (no-cache), the 304 costing them no budget; a keyed answer
// only in the client's own cache.
func cacheControl(r Route) string {
	if r.Public() {
		return "public, no-cache"
	}
	return "private, no-cache"
}

// namedRequest is a cacheable request whose answer has a name.
type namedRequest struct {
	key         string
	sum         uint64
	etag        string
	notModified bool // answered 304
	// A streamed answer that store found storable, kept once it has been
	// relayed whole (wholeBody).
	storable    bool
	contentType string
}

// lookup names the request and answers 304 when the client holds the
// answer of that name; nil when the versions are unavailable (the request
// is then forwarded as if nothing were cached).
func (rc *responseCache) lookup(c *fiber.Ctx, r Route, id identity.Identity) *namedRequest {
	key, sum, etag, ok := rc.name(c.UserContext(), c, r, id)
	if !ok {
		rc.outcomes.WithLabelValues(r.Path, cacheUnversioned).Inc()
		return nil
	}
	n := &namedRequest{key: key, sum: sum, etag: etag}
	if web.ETagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
		rc.outcomes.WithLabelValues(r.Path, cacheNotModified).Inc()
		setValidators(c, r, etag)
		c.Status(fiber.StatusNotModified)
		n.notModified = true
	}
	return n
}

// serve answers from the cache; false on a miss.
func (rc *responseCache) serve(c *fiber.Ctx, r Route, n *namedRequest) bool {
	a, ok := rc.get(n.key, n.sum)
	if !ok {
		return false
	}
	rc.outcomes.WithLabelValues(r.Path, cacheHit).Inc()
	resp := c.Response()
	resp.SetStatusCode(fiber.StatusOK)
	resp.Header.SetContentType(a.contentType)
	resp.SetBodyRaw(a.body) // never written again; a HEAD sends its length only
	setValidators(c, r, n.etag)
	return true
}

// store names a forwarded answer and keeps it: a 200 of a GET read on the
// primary. Anything else keeps the backend's own headers. A streamed answer
// (an unpaginated list) is kept by wholeBody once relayed entirely.
func (rc *responseCache) store(c *fiber.Ctx, r Route, n *namedRequest, replica bool) {
	resp := c.Response()
	if resp.StatusCode() != fiber.StatusOK || replica {
		rc.outcomes.WithLabelValues(r.Path, cacheBypass).Inc()
		return
	}
	setValidators(c, r, n.etag)
	switch {
	case c.Method() != fiber.MethodGet: // a HEAD's answer has no body to keep
		rc.outcomes.WithLabelValues(r.Path, cacheBypass).Inc()
	case resp.IsBodyStream():
		n.storable, n.contentType = true, string(resp.Header.ContentType())
		rc.outcomes.WithLabelValues(r.Path, cacheMiss).Inc()
	default:
		rc.put(n.key, n.sum, resp)
		rc.outcomes.WithLabelValues(r.Path, cacheMiss).Inc()
	}
}

// whole keeps a streamed answer of n once it has been relayed entirely,
// if store found it storable and it is a complete JSON document: a backend
// that fails in the middle of a stream ends it early, and what it sent is
// then not an answer to keep.
func (rc *responseCache) whole(n *namedRequest) *wholeBody {
	return &wholeBody{max: rc.maxEntry, take: func(body []byte) {
		if n.storable && json.Valid(body) {
			rc.entries.Set(n.sum, &cachedAnswer{key: n.key, contentType: n.contentType, body: body})
		}
	}}
}

func setValidators(c *fiber.Ctx, r Route, etag string) {
	h := &c.Response().Header
	h.Set(fiber.HeaderETag, etag)
	h.Set(fiber.HeaderCacheControl, cacheControl(r))
	if !r.Public() {
		// A browser holding answers of two keys must not mix them up.
		h.Set(fiber.HeaderVary, "X-API-Key, Authorization")
	}
}
