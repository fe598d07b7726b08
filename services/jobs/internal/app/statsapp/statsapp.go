// Package statsapp is the HTTP side of job statistics: the apply redirect
// GET /go/{job_ref} that counts a click, the counting of page views and
// impressions (Counter, used by the pages and lists), and the posters'
// reads GET /v2/jobs/{id_job}/stats and GET /v2/stats.
package statsapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// Jobs is what the redirect and the counting need of the jobs
// (*jobbus.Business).
type Jobs interface {
	PublicByID(ctx context.Context, id int64) (jobbus.Detail, error)
	Visible(d jobbus.Detail) bool
	JobURL(pageURL string) string
	BaseURL() string
}

// Config wires the routes.
type Config struct {
	Log      *slog.Logger
	Codec    *identity.Codec
	Jobs     Jobs
	Stats    *statsbus.Business
	Recorder *statsbus.Recorder
	Visitors *statsbus.Visitors
	Refs     *statsbus.Refs
	Now      func() time.Time
	// Off counts nothing (STATS_COUNTING=false): the redirect still
	// redirects and the pages still render their counted links.
	Off bool
}

// Counter counts views, clicks and impressions into the Recorder; it never
// blocks a request on storage.
type Counter struct {
	cfg   Config
	known lastKnown
}

// lastKnown keeps where the jobs clicked lately led (at most knownMax of
// them, for knownTTL), so that GET /go/ still answers 302 while the jobs'
// own store is briefly away (a PostgreSQL restart): the target is the job's
// own URL as it was minutes ago, never anything the request says.
type lastKnown struct {
	mu sync.Mutex
	m  map[int64]knownTarget
}

type knownTarget struct {
	url     string
	visible bool
	at      time.Time
}

const (
	knownMax = 50_000
	knownTTL = 10 * time.Minute
)

func (l *lastKnown) put(id int64, t knownTarget) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= knownMax {
		l.m = make(map[int64]knownTarget, 1024) // the bound: start over
	}
	l.m[id] = t
}

func (l *lastKnown) get(id int64, now time.Time) (knownTarget, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.m[id]
	return t, ok && now.Sub(t.at) < knownTTL
}

// NewCounter returns the counter of cfg.
func NewCounter(cfg Config) *Counter {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Counter{cfg: cfg}
}

// clientIP is the client's address as the gateway signed it ("" for a
// request that did not pass it).
func (k *Counter) clientIP(c *fiber.Ctx) string {
	if id := identity.From(c); id != nil {
		return id.ClientIP
	}
	if id, err := k.cfg.Codec.Verify(c.Get(identity.Header)); err == nil {
		return id.ClientIP
	}
	return ""
}

// event is an event of the request's client.
func (k *Counter) event(c *fiber.Ctx, jobID int64, kind statsbus.Kind, channel string) statsbus.Event {
	now := k.cfg.Now()
	ua := c.Get(fiber.HeaderUserAgent)
	e := statsbus.Event{JobID: jobID, Kind: kind, Channel: channel, At: now, Agent: statsbus.Classify(ua)}
	if e.Agent == statsbus.AgentBrowser {
		e.Visitor = k.cfg.Visitors.Of(now, k.clientIP(c), ua)
	}
	return e
}

// RequestChannel is the channel a page request names (utm_source, then
// ref), or def.
func RequestChannel(c *fiber.Ctx, def string) string {
	for _, q := range []string{"utm_source", "ref", "src"} {
		if ch := statsbus.Channel(c.Query(q)); ch != "" {
			return ch
		}
	}
	return def
}

// countable reports whether a request is one a person made: a GET (a HEAD is
// a link checker's), not a browser's speculative prefetch.
func countable(c *fiber.Ctx) bool {
	if c.Method() != fiber.MethodGet {
		return false
	}
	return !strings.Contains(c.Get("Sec-Purpose"), "prefetch") && !strings.Contains(c.Get("Purpose"), "prefetch")
}

// View counts a view of the job's public page and returns its channel.
func (k *Counter) View(c *fiber.Ctx, jobID int64) string {
	ch := RequestChannel(c, statsbus.ChannelPage)
	if !k.cfg.Off && countable(c) {
		k.cfg.Recorder.Record(k.event(c, jobID, statsbus.KindView, ch))
	}
	return ch
}

// GoURL is the apply link of a job through the redirect, for channel.
func (k *Counter) GoURL(jobID int64, channel string) string {
	return k.cfg.Jobs.BaseURL() + "/go/" + k.cfg.Refs.Of(jobID) + "?src=" + url.QueryEscape(channel)
}

// Agent is who a request's user agent says the client is.
func Agent(c *fiber.Ctx) statsbus.Agent { return statsbus.Classify(c.Get(fiber.HeaderUserAgent)) }

// Impression counts a job shown in a list, a feed or an embed.
func (k *Counter) Impression(agent statsbus.Agent, channel string, jobID int64) {
	if k == nil || k.cfg.Off {
		return
	}
	k.cfg.Recorder.Record(statsbus.Event{JobID: jobID, Kind: statsbus.KindImpression, Channel: channel, Agent: agent})
}

// Routes mounts GET /go/:ref (public: the gateway routes it without a key)
// and the stats reads under /v2 behind the identity check.
func Routes(app *fiber.App, k *Counter) {
	id := k.cfg.Codec.Middleware()
	app.Get("/go/:ref", id, k.redirect)
	readers := identity.RequireKind(identity.KindLive, identity.KindRestricted)
	app.Get("/v2/jobs/:id_job<int>/stats", id, readers, k.jobStats)
	app.Get("/v2/stats", id, readers, k.summary)
	// The dashboard's charts (docs/internal-api.md): the gateway asks as a service.
	app.Get("/internal/spaces/:id<int>/stats", id, identity.RequireKind(identity.KindService), k.spaceStats)
}

const notFoundPage = `<!doctype html><html lang="en"><meta charset="utf-8"><title>Link not found</title>` +
	`<p>This link leads to no job. It may have been mistyped.</p></html>`

// redirect answers GET /go/{job_ref}?src=: the click is counted (in the
// buffer: the answer never waits for the statistics' store) and the client
// sent to the job's own apply address. A ref that names no job is a 404; a
// job no longer listed sends the client to its page, which says so,
// uncounted. While the jobs' store fails, a job clicked in the last
// knownTTL still redirects where it last led (lastKnown).
func (k *Counter) redirect(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Robots-Tag", "noindex, nofollow")
	id, ok := k.cfg.Refs.Parse(c.Params("ref"))
	var d jobbus.Detail
	var err error
	if ok {
		d, err = k.cfg.Jobs.PublicByID(c.UserContext(), id)
	}
	var to knownTarget
	switch {
	case !ok || errors.Is(err, jobbus.ErrNotFound) || err == nil && d.Status == jobbus.StatusDraft:
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Status(http.StatusNotFound).SendString(notFoundPage)
	case err != nil:
		known, ok := k.known.get(id, k.cfg.Now())
		if !ok {
			return fmt.Errorf("go: job %d: %w", id, err)
		}
		k.cfg.Log.WarnContext(c.UserContext(), "go: the job's store failed; redirecting where it last led", "job_id", id, "error", err)
		to = known
	default:
		page := k.cfg.Jobs.JobURL(jobbus.PageURL(d.Slug, d.ID))
		to = knownTarget{url: page, visible: k.cfg.Jobs.Visible(d), at: k.cfg.Now()}
		if to.visible {
			to.url = statsbus.Target(d, page)
		}
		k.known.put(id, to)
	}
	// A job no longer listed leads to its page, which says so, uncounted.
	if to.visible && !k.cfg.Off && countable(c) {
		k.cfg.Recorder.Record(k.event(c, id, statsbus.KindClick, RequestChannel(c, statsbus.ChannelDirect)))
	}
	return c.Redirect(to.url, http.StatusFound)
}

func caller(c *fiber.Ctx) jobbus.Caller {
	id := identity.From(c)
	return jobbus.Caller{KeyID: id.KeyID, SpaceID: id.SpaceID, TrustedImporter: id.TrustedImporter}
}

// parseRange reads from, to (YYYY-MM-DD, UTC days) and interval.
func parseRange(c *fiber.Ctx, withInterval bool) (statsbus.Range, error) {
	var r statsbus.Range
	var problems []string
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &r.From}, {"to", &r.To}} {
		if v := c.Query(f.name); v != "" {
			t, err := time.Parse(time.DateOnly, v)
			if err != nil {
				problems = append(problems, f.name+" must be a date (YYYY-MM-DD, a UTC day)")
				continue
			}
			*f.dst = t
		}
	}
	if withInterval {
		r.Interval = c.Query("interval", statsbus.IntervalDay)
		if r.Interval != statsbus.IntervalDay && r.Interval != statsbus.IntervalWeek {
			problems = append(problems, "interval must be one of day, week")
		}
	} else if c.Query("interval") != "" {
		problems = append(problems, "interval is not a parameter of GET /v2/stats")
	}
	if len(problems) > 0 {
		return r, web.Validation("Validation failed", problems)
	}
	return r, nil
}

// toWebError maps the reads' refusals.
func toWebError(err error) error {
	switch {
	case errors.Is(err, statsbus.ErrRange):
		return web.Validation("Validation failed", []string{strings.TrimPrefix(err.Error(), statsbus.ErrRange.Error()+": ")})
	case errors.Is(err, statsbus.ErrPlan):
		return web.Forbidden("Job statistics are included in the Pro plan: this key's space is not a confirmed Pro space. " +
			"Upgrade the space to Pro, or read them with the platform key that posted the job")
	case errors.Is(err, jobbus.ErrNotFound):
		return web.NotFound("Job not found")
	case errors.Is(err, jobbus.ErrForbidden):
		return web.Forbidden("This job belongs to another poster; its statistics are its poster's")
	case errors.Is(err, jobbus.ErrDirectoryUnavailable):
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The space directory is unavailable; retry shortly"}
	}
	return err
}
