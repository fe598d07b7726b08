// Package responsecache names the answers of the cacheable GETs (ETag) from
// the change versions, decides the 304s, and keeps whole answers in a store
// (stores/memstore, stores/redisstore) to answer the next request without
// the backend.
//
// An answer is kept under its request (path, query, key) with its name: a
// write moves the versions, so the next request has a new name, its entry no
// longer matches and is replaced by the next answer; nothing is ever
// invalidated or served stale.
package responsecache

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
)

// Response cache stores (RESPONSE_CACHE_STORE).
const (
	StoreMemory = "memory" // per gateway replica (stores/memstore)
	StoreRedis  = "redis"  // shared by every replica (stores/redisstore)
)

// Config is the response cache's configuration.
type Config struct {
	Store    string        // StoreMemory or StoreRedis
	MaxBytes uint64        // memory: the bytes held per replica; both: an answer above MaxBytes/8 is not kept
	TTL      time.Duration // redis: how long an entry is kept
}

// MaxEntry is the largest answer kept with MaxBytes: an eighth of it,
// capped, so that one unpaginated list may not push out the many pages.
func (c Config) MaxEntry() int { return int(min(c.MaxBytes/8, 8<<20)) }

// Answer is a kept answer.
type Answer struct {
	Name        string // the answer's whole name, to rule out a collision and an old version
	ContentType string
	Body        []byte // never written after it is stored: hits send it without a copy
}

// Storer keeps whole answers, one entry per request id (Request.ID).
type Storer interface {
	// Get returns the answer named r.Name, if kept.
	Get(ctx context.Context, r *Request) (*Answer, bool)
	// Put keeps body as the answer named r.Name; body changes hands.
	Put(r *Request, contentType string, body []byte)
	// ReadsWithVersions reports whether a request's entry is read in the
	// same round trip as the change versions (into Request.Entry).
	ReadsWithVersions() bool
}

// Cache names, answers and keeps the cacheable GETs.
type Cache struct {
	versions     *changes.Coalesced
	store        Storer
	withVersions bool   // store.ReadsWithVersions()
	salt         string // the gateway's version: a new release renames every answer
	maxEntry     int    // the largest answer kept
	// pauseUntil (unix ns) skips the version reads for a second after one
	// failed: with Redis unreachable each read would wait out its timeout
	// before the request went on uncached.
	pauseUntil atomic.Int64
	outcomes   *prometheus.CounterVec
}

// Cache outcomes, the label of gateway_response_cache_total.
const (
	outcomeNotModified = "not_modified" // 304: the client's copy is current
	outcomeHit         = "hit"
	outcomeMiss        = "miss"        // forwarded and stored
	outcomeBypass      = "bypass"      // forwarded, not storable (not a 200, streamed, a replica's)
	outcomeUnversioned = "unversioned" // versions unreadable or missing: forwarded, not named
)

// New returns the cache of the versions v kept in store; salt renames every
// answer (the gateway's version), reg receives its instruments (nil: none).
func New(v *changes.Versions, store Storer, cfg Config, salt string, reg *prometheus.Registry) *Cache {
	rc := &Cache{
		versions: v.Coalesced(), store: store, withVersions: store.ReadsWithVersions(), salt: salt,
		maxEntry: cfg.MaxEntry(),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_response_cache_total",
			Help: "Cacheable GETs by route and outcome (not_modified, hit, miss, bypass, unversioned).",
		}, []string{"route", "outcome"}),
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
	}
	return rc
}

// Request is a cacheable request whose answer has a name.
type Request struct {
	ID   uint64 // the request's (path, query, key): the stores' key
	Name string // the answer's name: the request and the versions
	// Entry is the shared store's entry for ID when it was read with the
	// versions (Fetched).
	Entry   string
	Fetched bool

	etag        string
	notModified bool // answered 304
	// If-None-Match: *, which matches only an answer this key may read:
	// forwarded and counted like any read, its 200 then answered as a 304.
	anyETag bool
	// A streamed answer that Store found storable, kept once it has been
	// relayed whole (TakeWhole).
	storable    bool
	contentType string
}

// EntryID is the shared store's id of r's entry.
func (r *Request) EntryID() string { return strconv.FormatUint(r.ID, 36) }

// NotModified reports whether Lookup answered the request 304.
func (r *Request) NotModified() bool { return r.notModified }

// Serve answers from the store; false on a miss.
func (rc *Cache) Serve(c *fiber.Ctx, r routes.Route, n *Request) bool {
	a, ok := rc.store.Get(c.UserContext(), n)
	if !ok {
		return false
	}
	rc.outcomes.WithLabelValues(r.Path, outcomeHit).Inc()
	resp := c.Response()
	resp.SetStatusCode(fiber.StatusOK)
	resp.Header.SetContentType(a.ContentType)
	resp.SetBodyRaw(a.Body) // never written again; a HEAD sends its length only
	setValidators(c, r, n.etag)
	// A kept answer is the backend's 200 to this key at these versions: it
	// exists, and this key may read it.
	notModifiedIfAny(resp, n)
	return true
}

// Store names a forwarded answer and keeps it: a 200 of a GET read on the
// primary (replica false). Anything else keeps the backend's own headers. A
// streamed answer (an unpaginated list) is kept by TakeWhole once relayed
// entirely. The memory store takes the body's buffer without copying it: it
// changes hands (SwapBody gives it up), and resp goes on sending it as a raw
// body, which fasthttp never writes to.
func (rc *Cache) Store(c *fiber.Ctx, r routes.Route, n *Request, replica bool) {
	resp := c.Response()
	if resp.StatusCode() != fiber.StatusOK || replica {
		rc.outcomes.WithLabelValues(r.Path, outcomeBypass).Inc()
		return
	}
	setValidators(c, r, n.etag)
	switch {
	case c.Method() != fiber.MethodGet: // a HEAD's answer has no body to keep
		rc.outcomes.WithLabelValues(r.Path, outcomeBypass).Inc()
	case resp.IsBodyStream():
		n.storable, n.contentType = true, string(resp.Header.ContentType())
		rc.outcomes.WithLabelValues(r.Path, outcomeMiss).Inc()
	case len(resp.Body()) > rc.maxEntry:
		rc.outcomes.WithLabelValues(r.Path, outcomeBypass).Inc()
	default:
		body := resp.SwapBody(nil)
		resp.SetBodyRaw(body)
		rc.store.Put(n, string(resp.Header.ContentType()), body)
		rc.outcomes.WithLabelValues(r.Path, outcomeMiss).Inc()
	}
	notModifiedIfAny(resp, n)
}

// MaxEntry is the largest answer kept.
func (rc *Cache) MaxEntry() int { return rc.maxEntry }

// TakeWhole keeps a streamed answer of n once it has been relayed entirely,
// if Store found it storable and it is a complete JSON or XML document: a
// backend that fails in the middle of a stream ends it early, and what it
// sent is then not an answer to keep.
func (rc *Cache) TakeWhole(n *Request) func(body []byte) {
	return func(body []byte) {
		if n.storable && whole(n.contentType, body) {
			rc.store.Put(n, n.contentType, body)
		}
	}
}

// whole reports whether body is a complete document of its type (JSON, or
// XML: the sitemaps and aggregator feeds); any other type is never kept.
func whole(contentType string, body []byte) bool {
	switch mt, _, _ := strings.Cut(contentType, ";"); {
	case strings.HasSuffix(mt, "json"):
		return json.Valid(body)
	case strings.HasSuffix(mt, "xml"):
		d := xml.NewDecoder(bytes.NewReader(body))
		depth, root := 0, false
		for {
			tok, err := d.RawToken()
			if errors.Is(err, io.EOF) {
				return root && depth == 0
			}
			if err != nil {
				return false
			}
			switch tok.(type) {
			case xml.StartElement:
				depth++
				root = true
			case xml.EndElement:
				depth--
			}
		}
	}
	return false
}
