package gatewayapp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

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

func fixed(s ...string) func(int64) []string { return func(int64) []string { return s } }

// responseCache keeps whole answers, one entry per request (path, query,
// key) holding the answer's name: a write moves the versions, so the next
// request has a new name, its entry no longer matches and is replaced by the
// next answer; nothing is ever invalidated or served stale. Two stores
// (RESPONSE_CACHE_STORE):
//
//   - memory, per gateway replica: a hit costs no round trip and no copy of
//     the body (a page of 20 jobs is ~15 KB), bounded in bytes (otter's
//     weighted S3-FIFO); the price is one miss per replica per version, and
//     the answers in the gateway's heap, doubled by the GC's headroom (16 MiB
//     of answers added 35 MiB of RssAnon, docs/benchmarks.md).
//   - redis, shared by every replica: an entry is read in the same MGET as
//     the versions (libs/changes.Coalesced.ReadEntry) and written after the
//     answer in pipelined batches, off the request's path; one miss per
//     version for the whole deployment and no answers in the gateway's heap.
//     Entries expire after their TTL; Redis's maxmemory bounds the total.
type responseCache struct {
	versions *changes.Coalesced
	v        *changes.Versions
	entries  *otter.Cache[uint64, *cachedAnswer] // memory store; nil with redis
	shared   *entryWriter                        // redis store; nil with memory
	seen     *doorkeeper                         // redis store: admits an answer asked for twice
	salt     string                              // the gateway's version: a new release renames every answer
	maxEntry int                                 // the largest answer kept
	// pauseUntil (unix ns) skips the version reads for a second after one
	// failed: with Redis unreachable each read would wait out its timeout
	// (250 ms) before the request went on uncached.
	pauseUntil atomic.Int64
	outcomes   *prometheus.CounterVec
}

type cachedAnswer struct {
	key         string // the answer's whole name, to rule out a collision and an old version
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

// Response cache stores (RESPONSE_CACHE_STORE).
const (
	StoreMemory = "memory"
	StoreRedis  = "redis"
)

// CacheConfig is the response cache's configuration (Config.Cache).
type CacheConfig struct {
	Store    string        // StoreMemory or StoreRedis
	MaxBytes uint64        // memory: the bytes held per replica; both: an answer above MaxBytes/8 is not kept
	TTL      time.Duration // redis: how long an entry is kept
}

func newResponseCache(v *changes.Versions, cc CacheConfig, salt string, reg *prometheus.Registry) *responseCache {
	rc := &responseCache{
		versions: v.Coalesced(), v: v, salt: salt,
		// An eighth of the budget, at most 8 MiB: one unpaginated list
		// (~0.7 KB a job) may not push out the many pages.
		maxEntry: int(min(cc.MaxBytes/8, 8<<20)),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_total",
			Help: "Cacheable GETs by route and outcome (not_modified, hit, miss, bypass, unversioned).",
		}, []string{"route", "outcome"}),
	}
	if cc.Store == StoreRedis {
		rc.shared, rc.seen = newEntryWriter(v, cc.TTL, reg), newDoorkeeper(doorkeeperSlots)
	} else {
		rc.entries = otter.Must(&otter.Options[uint64, *cachedAnswer]{
			MaximumWeight: cc.MaxBytes,
			Weigher: func(_ uint64, a *cachedAnswer) uint32 {
				return uint32(len(a.key) + len(a.contentType) + len(a.body) + 96)
			},
		})
	}
	if reg != nil {
		reg.MustRegister(rc.outcomes,
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gateway_change_version_reads_total",
				Help: "Reads of the change versions (one per cacheable GET while Redis answers).",
			}, func() float64 { r, _ := rc.versions.Counts(); return float64(r) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "gateway_change_version_batches_total",
				Help: "Redis MGETs that served those reads: concurrent reads share one (libs/changes.Coalesced).",
			}, func() float64 { _, b := rc.versions.Counts(); return float64(b) }))
		if rc.entries != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "gateway_response_cache_bytes",
				Help: "Bytes of answers held by the response cache (the weight otter counts; memory store).",
			}, func() float64 { return float64(rc.entries.WeightedSize()) }))
		}
	}
	return rc
}

// name computes the request's id (path, query, key: the cache's key), the
// answer's name (the request and the current versions; the entry's check)
// and its ETag; ok is false when the versions cannot be read (the answer is
// then neither named nor cached). With the shared store and fetch, the
// request's entry comes in the same round trip. The hash is FNV-1a, not
// maphash: every gateway replica and restart must give the same request the
// same ETag and id.
func (rc *responseCache) name(ctx context.Context, c *fiber.Ctx, r Route, id identity.Identity, n *namedRequest, fetch bool) bool {
	now := time.Now().UnixNano()
	if now < rc.pauseUntil.Load() {
		return false
	}
	var nameBuf [256]byte // on the stack unless a name outgrows it
	b := nameBuf[:0]
	b = append(b, rc.salt...)
	b = append(b, 0)
	b = append(b, c.Path()...)
	b = append(b, '?')
	b = append(b, withoutAPIKey(c.Request().URI().QueryString())...)
	b = append(b, 0)
	b = binary.AppendVarint(b, id.KeyID)
	n.id = fnv64a(b)
	var buf [4]uint64
	var vs []uint64
	var err error
	if fetch && rc.shared != nil {
		// An absent entry leaves n.entry empty, which matches no name.
		vs, n.entry, _, err = rc.versions.ReadEntry(ctx, buf[:0], n.entryID(), r.Cache.Scopes(id.SpaceID)...)
		n.fetched = true
	} else {
		vs, err = rc.versions.Read(ctx, buf[:0], r.Cache.Scopes(id.SpaceID)...)
	}
	if err != nil {
		if !errors.Is(err, changes.ErrMissing) {
			rc.pauseUntil.Store(now + int64(time.Second))
		}
		return false
	}
	b = append(b, 0)
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	if r.Cache.Bucket > 0 {
		b = binary.AppendVarint(b, now/int64(r.Cache.Bucket))
	}
	sum := fnv64a(b)
	n.key, n.etag = string(b), `W/"`+strconv.FormatUint(sum, 36)+`"`
	return true
}

// fnv64a is hash/fnv's 64-bit FNV-1a without its hash.Hash64: through the
// interface the name's buffer escaped to the heap on every request.
func fnv64a(b []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime
	}
	return h
}

// get returns the answer named n, if kept.
func (rc *responseCache) get(ctx context.Context, n *namedRequest) (*cachedAnswer, bool) {
	if rc.entries != nil {
		a, ok := rc.entries.GetIfPresent(n.id)
		if !ok || a.key != n.key {
			return nil, false
		}
		return a, true
	}
	if !n.fetched {
		// A conditional request whose copy was not current: its entry
		// was not read with the versions, to spare every 304 the body.
		e, found, err := rc.v.ReadEntry(ctx, n.entryID())
		if err != nil || !found {
			return nil, false
		}
		n.entry = e
	}
	return decodeEntry(n.entry, n.key)
}

// put keeps resp's body as the answer named n. The memory store takes the
// body's buffer without copying it: it changes hands (SwapBody gives it
// up), and resp goes on sending it as a raw body, which fasthttp never
// writes to. The shared store queues an encoded copy.
func (rc *responseCache) put(n *namedRequest, contentType string, body []byte) {
	if rc.entries != nil {
		rc.entries.Set(n.id, &cachedAnswer{key: n.key, contentType: contentType, body: body})
		return
	}
	if !rc.seen.admit(n.id) {
		rc.shared.skipped.Inc()
		return
	}
	rc.shared.put(n.entryID(), encodeEntry(n.key, contentType, body))
}

// doorkeeper remembers the requests whose answers were not kept yet, as
// TinyLFU's doorkeeper does: the shared store keeps an answer the second
// time this replica forwards its request. A request asked for once (a
// crawler's, or one made unique to get past the cache) then costs Redis
// neither a write nor its memory: those answers filled Redis by 15 KB each
// before (docs/benchmarks.md). Lossy and lock-free: one slot per request id
// modulo its size, the last id wins, so a collision at worst costs a
// request one more miss; 2^16 slots are 512 KiB.
type doorkeeper struct{ slots []atomic.Uint64 }

const doorkeeperSlots = 1 << 16

func newDoorkeeper(n int) *doorkeeper { return &doorkeeper{slots: make([]atomic.Uint64, n)} }

// admit reports whether id was seen since its slot last changed hands, and
// remembers it otherwise.
func (d *doorkeeper) admit(id uint64) bool {
	slot := &d.slots[id%uint64(len(d.slots))]
	if slot.Load() == id {
		return true
	}
	slot.Store(id)
	return false
}

// encodeEntry is a shared entry: the name, the content type (each with its
// length as a uvarint) and the body.
func encodeEntry(name, contentType string, body []byte) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen32+len(name)+len(contentType)+len(body))
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(len(contentType)))
	b = append(b, contentType...)
	return append(b, body...)
}

// decodeEntry returns the answer in entry when it is the one named name.
// The body is a view of the entry's string, which nothing writes to.
func decodeEntry(entry, name string) (*cachedAnswer, bool) {
	field := func() (string, bool) {
		l, w := binary.Uvarint([]byte(entry[:min(len(entry), binary.MaxVarintLen64)]))
		if w <= 0 || uint64(len(entry)-w) < l {
			return "", false
		}
		f := entry[w : w+int(l)]
		entry = entry[w+int(l):]
		return f, true
	}
	got, ok := field()
	if !ok || got != name {
		return nil, false
	}
	ct, ok := field()
	if !ok {
		return nil, false
	}
	return &cachedAnswer{key: name, contentType: ct, body: unsafe.Slice(unsafe.StringData(entry), len(entry))}, true
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
	id          uint64 // the request's: the cache's key
	key         string // the answer's name: the request and the versions
	etag        string
	notModified bool // answered 304
	// If-None-Match: *, which matches only an answer this key may read:
	// forwarded and counted like any read, its 200 then answered as a 304.
	anyETag bool
	// The shared store's entry for id, when read with the versions.
	entry   string
	fetched bool
	// A streamed answer that store found storable, kept once it has been
	// relayed whole (wholeBody).
	storable    bool
	contentType string
}

// entryID is the shared store's id of n's entry.
func (n *namedRequest) entryID() string { return strconv.FormatUint(n.id, 36) }

// lookup names the request and answers 304 when the client holds the
// answer of that name; nil when the versions are unavailable (the request
// is then forwarded as if nothing were cached).
func (rc *responseCache) lookup(c *fiber.Ctx, r Route, id identity.Identity) *namedRequest {
	inm := c.Get(fiber.HeaderIfNoneMatch)
	// The versions say what the current answer is called, not whether there
	// is one this key may read (a job that does not exist, another space's
	// draft): * is left to the backend.
	n := &namedRequest{anyETag: strings.TrimSpace(inm) == "*"}
	// Only a GET the cache may answer from its entry (without a validator,
	// or with *) reads it with the versions: a 304 from the versions needs
	// no body.
	if !rc.name(c.UserContext(), c, r, id, n, (inm == "" || n.anyETag) && c.Method() == fiber.MethodGet) {
		rc.outcomes.WithLabelValues(r.Path, cacheUnversioned).Inc()
		return nil
	}
	if !n.anyETag && web.ETagMatches(inm, n.etag) {
		rc.outcomes.WithLabelValues(r.Path, cacheNotModified).Inc()
		setValidators(c, r, n.etag)
		c.Status(fiber.StatusNotModified)
		n.notModified = true
	}
	return n
}

// serve answers from the cache; false on a miss.
func (rc *responseCache) serve(c *fiber.Ctx, r Route, n *namedRequest) bool {
	a, ok := rc.get(c.UserContext(), n)
	if !ok {
		return false
	}
	rc.outcomes.WithLabelValues(r.Path, cacheHit).Inc()
	resp := c.Response()
	resp.SetStatusCode(fiber.StatusOK)
	resp.Header.SetContentType(a.contentType)
	resp.SetBodyRaw(a.body) // never written again; a HEAD sends its length only
	setValidators(c, r, n.etag)
	// A kept answer is the backend's 200 to this key at these versions: it
	// exists, and this key may read it.
	notModifiedIfAny(resp, n)
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
	case len(resp.Body()) > rc.maxEntry:
		rc.outcomes.WithLabelValues(r.Path, cacheBypass).Inc()
	default:
		body := resp.SwapBody(nil)
		resp.SetBodyRaw(body)
		rc.put(n, string(resp.Header.ContentType()), body)
		rc.outcomes.WithLabelValues(r.Path, cacheMiss).Inc()
	}
	notModifiedIfAny(resp, n)
}

// notModifiedIfAny answers a 200 to If-None-Match: * as a 304, without its
// body (a stream is closed unread, and its backend connection with it), its
// framing and type, or the backend's status text.
func notModifiedIfAny(resp *fasthttp.Response, n *namedRequest) {
	if !n.anyETag || resp.StatusCode() != fiber.StatusOK {
		return
	}
	resp.SetStatusCode(fiber.StatusNotModified)
	resp.Header.SetStatusMessage(nil)
	resp.ResetBody()
	resp.Header.Del(fiber.HeaderContentLength)
	resp.Header.Del(fiber.HeaderTransferEncoding)
	resp.Header.Del(fiber.HeaderContentType)
}

// whole keeps a streamed answer of n once it has been relayed entirely,
// if store found it storable and it is a complete JSON document: a backend
// that fails in the middle of a stream ends it early, and what it sent is
// then not an answer to keep.
func (rc *responseCache) whole(n *namedRequest) *wholeBody {
	return &wholeBody{max: rc.maxEntry, take: func(body []byte) {
		if n.storable && json.Valid(body) {
			rc.put(n, n.contentType, body)
		}
	}}
}

// setValidators names the answer. A forwarded answer keeps its backend's
// header names as sent (Etag, as fasthttp writes ETag), so each header is
// replaced whatever its case: one validator per answer.
func setValidators(c *fiber.Ctx, r Route, etag string) {
	h := &c.Response().Header
	replaceHeader(h, fiber.HeaderETag, etag)
	replaceHeader(h, fiber.HeaderCacheControl, cacheControl(r))
	if !r.Public() {
		// A browser holding answers of two keys must not mix them up.
		replaceHeader(h, fiber.HeaderVary, "X-API-Key, Authorization")
	}
}

// replaceHeader sets name to value after deleting every header of that name
// in any case.
func replaceHeader(h *fasthttp.ResponseHeader, name, value string) {
	var other [][]byte
	h.VisitAll(func(k, _ []byte) {
		if len(k) == len(name) && string(k) != name && asciiEqualFold(k, name) {
			other = append(other, append([]byte(nil), k...))
		}
	})
	for _, k := range other {
		h.DelBytes(k)
	}
	h.Set(name, value)
}

// asciiEqualFold is strings.EqualFold for header names of len(name) bytes,
// without copying k into a string.
func asciiEqualFold(k []byte, name string) bool {
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	for i := range k {
		if lower(k[i]) != lower(name[i]) {
			return false
		}
	}
	return true
}

// entryWriter writes the shared store's entries off the requests' path: a
// miss queues its answer and goes on, and one goroutine writes whatever has
// queued in one pipeline. A full queue drops the entry (the next request
// misses again) rather than holding a request or growing the heap.
type entryWriter struct {
	v       *changes.Versions
	ttl     time.Duration
	q       chan changes.Entry
	written *prometheus.CounterVec
	skipped prometheus.Counter // answers not kept: asked for once so far (doorkeeper)
}

// entryQueue bounds the entries waiting: at most this many answers (each at
// most maxEntry) are held in the heap at once.
const entryQueue = 256

func newEntryWriter(v *changes.Versions, ttl time.Duration, reg *prometheus.Registry) *entryWriter {
	w := &entryWriter{v: v, ttl: ttl, q: make(chan changes.Entry, entryQueue),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_writes_total",
			Help: "Answers for the shared response cache (redis store) by outcome: written, dropped (queue full), failed (Redis), first_request (not kept: the first time this replica forwarded its request).",
		}, []string{"outcome"})}
	w.skipped = w.written.WithLabelValues("first_request")
	if reg != nil {
		reg.MustRegister(w.written)
	}
	return w
}

func (w *entryWriter) put(id string, value []byte) {
	select {
	case w.q <- changes.Entry{ID: id, Value: value, TTL: w.ttl}:
	default:
		w.written.WithLabelValues("dropped").Inc()
	}
}

// run writes queued entries until ctx ends.
func (w *entryWriter) run(ctx context.Context) {
	batch := make([]changes.Entry, 0, 64)
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-w.q:
			batch = append(batch[:0], e)
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case e := <-w.q:
				batch = append(batch, e)
			default:
				break fill
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		outcome := "written"
		if err := w.v.WriteEntries(wctx, batch); err != nil {
			outcome = "failed"
		}
		cancel()
		w.written.WithLabelValues(outcome).Add(float64(len(batch)))
		clear(batch) // the answers go to the GC now, not with the next batch
	}
}
