// Package budget decides which rate-limit budget a request spends (per key
// for keyed routes, per client IP for public ones, by the route's limit
// class), spends it with the ratelimit limiter, answers 429 when it is
// exhausted, and writes the X-RateLimit-* and IETF RateLimit headers.
package budget

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
)

// Config is the budgets per minute of each limit class.
type Config struct {
	Limiter *ratelimit.Limiter

	WriteLimitPerMinute  int
	PublicLimitPerMinute int
	// Read budgets per minute; 0 turns that limit off.
	ReadLimitPerMinute       int
	PublicReadLimitPerMinute int
	// BatchRowsPerWrite: a batch route's request spends its rows divided by
	// this (rounded up, at least 1) of the write budget; default 10.
	BatchRowsPerWrite int
}

// Budgets spends the requests' budgets.
type Budgets struct {
	cfg       Config
	decisions *prometheus.CounterVec
}

// New returns the budgets of cfg; reg receives their instruments (nil: none).
func New(cfg Config, reg *prometheus.Registry) *Budgets {
	if cfg.BatchRowsPerWrite < 1 {
		cfg.BatchRowsPerWrite = DefaultBatchRowsPerWrite
	}
	b := &Budgets{cfg: cfg, decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_rate_limit_decisions_total",
		Help: "Rate-limit checks by limit class, outcome (allowed, denied) and store (redis, local).",
	}, []string{"class", "outcome", "store"})}
	if reg != nil {
		reg.MustRegister(b.decisions)
	}
	return b
}

// For names the budget a request on r spends and its limit per window; the
// name is empty when the request spends none. key is nil on public routes.
// The name is built anew, so it owns its bytes (the limiter keeps it).
func (b *Budgets) For(c *fiber.Ctx, r routes.Route, key *keybus.Key) (name string, limit int) {
	if key == nil {
		switch {
		case r.Limit == routes.LimitPublicIP:
			return "ip:" + c.IP() + ":" + r.Path, b.cfg.PublicLimitPerMinute
		case r.Limit == routes.LimitPublicRead && b.cfg.PublicReadLimitPerMinute > 0:
			return "ip:" + c.IP() + ":read", b.cfg.PublicReadLimitPerMinute
		}
		return "", 0
	}
	switch {
	// A public POST reached with its optional key spends the key's write
	// budget, not the per-IP one (a platform posts for many users).
	case r.Limit == routes.LimitKeyWrite, r.Limit == routes.LimitPublicIP:
		limit = b.cfg.WriteLimitPerMinute
		if key.RateLimitPerMinute > 0 {
			limit = key.RateLimitPerMinute
		}
		return "key:" + strconv.FormatInt(key.ID, 10) + ":write", limit
	case r.Limit == routes.LimitKeyRead && b.cfg.ReadLimitPerMinute > 0:
		return "key:" + strconv.FormatInt(key.ID, 10) + ":read", b.cfg.ReadLimitPerMinute
	}
	return "", 0
}

// DefaultBatchRowsPerWrite is how many rows of a batch cost one write.
const DefaultBatchRowsPerWrite = 10

// Cost is the units a request on r spends: 1, or for a batch route its rows
// (the length of the body's "jobs" array) divided by BatchRowsPerWrite,
// rounded up, at least 1. A body that is not a batch costs 1: the backend
// refuses it.
func (b *Budgets) Cost(c *fiber.Ctx, r routes.Route) int {
	if !r.Batch {
		return 1
	}
	var body struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if json.Unmarshal(c.Body(), &body) != nil {
		return 1
	}
	return max(1, (len(body.Jobs)+b.cfg.BatchRowsPerWrite-1)/b.cfg.BatchRowsPerWrite)
}

// Spend takes n units (Cost) of the budget name of limit for a request on r.
// Large budgets are leased from Redis ahead of use, so most single checks
// cost no round trip (see BenchmarkAllowLeased); a batch's units are taken
// all at once or none.
func (b *Budgets) Spend(ctx context.Context, r routes.Route, name string, limit, n int) ratelimit.Decision {
	var d ratelimit.Decision
	if n > 1 {
		d = b.cfg.Limiter.AllowN(ctx, name, limit, n)
	} else {
		d = b.cfg.Limiter.AllowLeased(ctx, name, limit)
	}
	b.decisions.WithLabelValues(r.Limit, outcome(d), d.Source).Inc()
	return d
}

// Exceeded answers a request whose budget d denied: the headers, Retry-After
// and the spec's 429 with its details.
func (b *Budgets) Exceeded(c *fiber.Ctx, r routes.Route, d ratelimit.Decision) error {
	b.SetHeaders(c, r.Limit, d)
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(d.RetryAfterSeconds()))
	return &web.Error{Status: http.StatusTooManyRequests, Code: web.CodeRateLimitExceeded,
		Message: "Rate limit exceeded; retry after the given number of seconds",
		Details: fiber.Map{"limit_per_minute": d.Limit, "retry_after_seconds": d.RetryAfterSeconds()}}
}

// Limited reports whether requests on r are counted against a budget with
// this configuration.
func (b *Budgets) Limited(r routes.Route) bool {
	switch r.Limit {
	case routes.LimitKeyRead:
		return b.cfg.ReadLimitPerMinute > 0
	case routes.LimitPublicRead:
		return b.cfg.PublicReadLimitPerMinute > 0
	}
	return r.Limit != routes.LimitNone
}

func outcome(d ratelimit.Decision) string {
	if d.Allowed {
		return "allowed"
	}
	return "denied"
}

// SetHeaders writes the budget two ways: the X-RateLimit-* headers
// clients already read, and the IETF fields of
// draft-ietf-httpapi-ratelimit-headers (-10): RateLimit-Policy, a List of
// quota-policy Items ("name";q=quota;w=window seconds), and RateLimit, the
// same policy's live state ("name";r=remaining;t=seconds until it resets).
// The policy name is the route's limit class, so a client can tell the write
// budget from the read one.
func (b *Budgets) SetHeaders(c *fiber.Ctx, class string, d ratelimit.Decision) {
	reset := d.RetryAfterSeconds()
	h := &c.Response().Header
	var buf [64]byte
	h.SetBytesV("X-RateLimit-Limit", strconv.AppendInt(buf[:0], int64(d.Limit), 10))
	h.SetBytesV("X-RateLimit-Remaining", strconv.AppendInt(buf[:0], int64(d.Remaining), 10))
	h.SetBytesV("X-RateLimit-Reset", strconv.AppendInt(buf[:0], int64(reset), 10))
	h.SetBytesV("RateLimit-Policy", appendPolicyItem(buf[:0], class, 'q', d.Limit, 'w', int(b.cfg.Limiter.Window()/time.Second)))
	h.SetBytesV("RateLimit", appendPolicyItem(buf[:0], class, 'r', d.Remaining, 't', reset))
}

// appendPolicyItem appends the Structured Field Item "name";k1=v1;k2=v2. The
// names are the limit classes: lowercase letters and underscores, which a
// String holds without escapes.
func appendPolicyItem(b []byte, name string, k1 byte, v1 int, k2 byte, v2 int) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ';', k1, '=')
	b = strconv.AppendInt(b, int64(v1), 10)
	b = append(b, ';', k2, '=')
	return strconv.AppendInt(b, int64(v2), 10)
}
