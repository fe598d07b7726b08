// Package reachapp is the HTTP layer of the jobs' reach outside the API: the
// sitemaps of the public job pages, the aggregators' XML feeds and the
// embeddable list of a space's jobs. Each lists active jobs only, is
// streamed from a keyset walk (one batch in memory at a time), and is named
// by when the public set of jobs last changed (ETag, Last-Modified, 304).
package reachapp

import (
	"bufio"
	"context"
	"encoding/binary"
	"hash/fnv"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// Config wires the routes.
type Config struct {
	Log   *slog.Logger
	Bus   *jobbus.Business
	Codec *identity.Codec
	// Spaces finds a space by its slug (the embed's ?space=).
	Spaces SpaceFinder
	// AggregatorPlans limits the aggregators' feeds to these plans (empty:
	// every plan), e.g. the paid ones.
	AggregatorPlans []int
	// SitemapPartSize is the most URLs per sitemap part (default
	// jobbus.SitemapPartSize; tests make it small).
	SitemapPartSize int64
	// StreamTimeout bounds a streamed answer (default 60s).
	StreamTimeout time.Duration
	// Stats counts the impressions of the embed (channel embed) and the
	// aggregators' feeds (aggregator:<format>); nil counts none.
	Stats Impressions
}

// Impressions counts jobs shown (statsapp.Counter).
type Impressions interface {
	Impression(agent statsbus.Agent, channel string, jobID int64)
}

// impressions returns what counts a job shown to the request's client on
// channel; usable after the handler returns (a stream).
func (h *handlers) impressions(c *fiber.Ctx, channel string) func(jobID int64) {
	if h.cfg.Stats == nil {
		return func(int64) {}
	}
	agent := statsbus.Classify(c.Get(fiber.HeaderUserAgent))
	return func(jobID int64) { h.cfg.Stats.Impression(agent, channel, jobID) }
}

// SpaceFinder finds a space by slug; ok is false when there is none.
type SpaceFinder interface {
	SpaceBySlug(ctx context.Context, slug string) (space jobbus.Space, ok bool, err error)
}

// batch is how many jobs a walk reads per round trip.
const batch = 500

type handlers struct {
	cfg Config
	bus *jobbus.Business
	log *slog.Logger
}

// Routes mounts GET /sitemap.xml, /feeds/jobs.xml and /embed/jobs.js behind
// the identity check (the gateway forwards them with a public identity).
func Routes(app *fiber.App, cfg Config) {
	if cfg.SitemapPartSize <= 0 {
		cfg.SitemapPartSize = jobbus.SitemapPartSize
	}
	if cfg.StreamTimeout <= 0 {
		cfg.StreamTimeout = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &handlers{cfg: cfg, bus: cfg.Bus, log: cfg.Log}
	id := cfg.Codec.Middleware()
	app.Get("/sitemap.xml", id, h.sitemap)
	app.Get("/feeds/jobs.xml", id, h.aggregatorFeed)
	app.Get("/embed/jobs.js", id, h.embed)
}

// validators names an answer by when the public set of jobs last changed
// and the request (path and query), sets ETag, Last-Modified and
// Cache-Control, and reports whether the client's copy is current.
func validators(c *fiber.Ctx, changed time.Time, maxAge int) bool {
	h := fnv.New64a()
	_, _ = h.Write(c.Request().URI().Path())
	_, _ = h.Write([]byte{'?'})
	_, _ = h.Write(c.Request().URI().QueryString())
	_, _ = h.Write(binary.AppendVarint(nil, changed.UnixNano()))
	etag := `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderLastModified, changed.UTC().Format(http.TimeFormat))
	c.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(maxAge))
	c.Set(fiber.HeaderVary, "Accept-Encoding")
	return web.NotModified(c, etag, changed)
}

// stream writes head, then every job of w rendered by item, then tail: the
// first batch is read before the answer starts (so that a failure is still
// an error status), the rest as the body is written. A failure in the middle
// ends the body early; the document is then not well-formed, which tells
// the client (and the gateway, which keeps only whole documents).
func (h *handlers) stream(c *fiber.Ctx, mime string, w jobbus.ActiveWalk, head []byte, item func([]byte, *jobbus.Detail) []byte, tail []byte) error {
	// The stream outlives the handler: its own deadline, not the request's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.UserContext()), h.cfg.StreamTimeout)
	first, err := h.bus.Active(ctx, w)
	if err != nil {
		cancel()
		return err
	}
	c.Set(fiber.HeaderContentType, mime)
	c.Status(http.StatusOK)
	if c.Method() == fiber.MethodHead {
		cancel()
		return nil
	}
	bus, log := h.bus, h.log
	c.Context().SetBodyStreamWriter(func(bw *bufio.Writer) {
		defer cancel()
		b := make([]byte, 0, 64<<10)
		b = append(b, head...)
		jobs := first
		for {
			for i := range jobs {
				b = item(b, &jobs[i])
				if len(b) >= 56<<10 {
					if _, err := bw.Write(b); err != nil {
						return
					}
					if err := bw.Flush(); err != nil {
						return // the client went away
					}
					b = b[:0]
				}
			}
			if len(jobs) < w.Limit {
				break
			}
			w.AfterID = jobs[len(jobs)-1].ID
			var err error
			if jobs, err = bus.Active(ctx, w); err != nil {
				log.Error("stream active jobs", "error", err)
				_, _ = bw.Write(b)
				return
			}
		}
		b = append(b, tail...)
		_, _ = bw.Write(b)
		_ = bw.Flush()
	})
	return nil
}
