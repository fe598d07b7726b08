// Package gatewayapp is the gateway's HTTP layer: it authenticates keys,
// enforces the route table's scopes, applies rate limits, and forwards to the
// backends with a signed identity.
package gatewayapp

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
)

// Config is what the HTTP layer needs.
type Config struct {
	Log      *slog.Logger
	Keys     *keybus.Business
	Limiter  *ratelimit.Limiter
	Codec    *identity.Codec
	Redis    redis.UniversalClient // for health; nil when not configured
	Backends map[string]*Backend
	// Registry receives the gateway's own instruments (nil: none).
	Registry *prometheus.Registry

	WriteLimitPerMinute  int
	PublicLimitPerMinute int
	// Read budgets per minute; 0 turns that limit off.
	ReadLimitPerMinute       int
	PublicReadLimitPerMinute int
	PublicBaseURL            string
	Version                  string
	OpenAPIYAML              []byte
	// Docs holds docs/index.html and docs/redoc.standalone.js (api.Docs).
	Docs      fs.FS
	AccessLog bool
	// CORSAllowOrigins is a comma-separated list, or "*".
	CORSAllowOrigins string
	// Changes are the change versions the backends bump. With
	// Cache.MaxBytes > 0 the cacheable GETs (Route.Cache) are named (ETag,
	// 304) and cached in Cache.Store.
	Changes *changes.Versions
	Cache   CacheConfig
}

// App holds the gateway's handlers.
type App struct {
	cfg      Config
	openapi  openapiDocs
	health   *healthChecker
	limitHit *prometheus.CounterVec
	cache    *responseCache // nil: off
}

// Routes registers the route table on app.
func Routes(app *fiber.App, cfg Config) (*App, error) {
	docs, err := loadOpenAPI(cfg.OpenAPIYAML, cfg.Docs)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, openapi: docs, health: newHealthChecker(cfg)}
	if cfg.Cache.MaxBytes > 0 && cfg.Changes != nil {
		a.cache = newResponseCache(cfg.Changes, cfg.Cache, cfg.Version, cfg.Registry)
	}
	a.limitHit = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_rate_limit_decisions_total",
		Help: "Rate-limit checks by limit class, outcome (allowed, denied) and store (redis, local).",
	}, []string{"class", "outcome", "store"})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(a.limitHit, a.health.up)
		for name, b := range cfg.Backends {
			cfg.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "gateway_upstream_endpoints",
				Help:        "Addresses the gateway balances a backend's requests over (UPSTREAM_BALANCE=dns: the last resolve; else 1).",
				ConstLabels: prometheus.Labels{"backend": name},
			}, func() float64 { return float64(b.Endpoints()) }))
		}
	}
	app.Use(cors.New(cors.Config{
		// The API's alone: no other site may read the HTML pages (the
		// poster's carry the edit hash and their forms' tokens).
		Next:          func(c *fiber.Ctx) bool { return c.Path() != "/v2" && !strings.HasPrefix(c.Path(), "/v2/") },
		AllowOrigins:  cfg.CORSAllowOrigins,
		AllowMethods:  "GET,POST,HEAD,OPTIONS",
		AllowHeaders:  "X-API-Key, Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-ID",
		ExposeHeaders: "X-Request-ID, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, Idempotent-Replayed, ETag",
		MaxAge:        600,
	}), keepCORSHeaders)
	app.Use(securityHeaders)
	if cfg.AccessLog {
		app.Use(a.accessLog)
	}
	for _, r := range slices.Concat(Table, Pages) {
		if r.Backend != local {
			if _, ok := cfg.Backends[r.Backend]; !ok {
				return nil, fmt.Errorf("route %s %s: no backend %q configured", r.Method, r.Path, r.Backend)
			}
		}
		app.Add(r.Method, r.Path, a.handler(r))
		if r.Method == fiber.MethodGet {
			// HEAD is GET without the body (RFC 9110): same key, scope and
			// backend; the backends' Fiber GET routes answer HEAD too.
			app.Add(fiber.MethodHead, r.Path, a.handler(r))
		}
	}
	// The renderer script of the reference page: a static asset, not an API route.
	app.Get("/v2/docs/redoc.standalone.js", docs.serveRenderer)
	app.Get("/v2/docs/", redirectDocs)
	return a, nil
}

// local handlers by path.
func (a *App) localHandler(path string) fiber.Handler {
	switch path {
	case "/v2":
		return a.info
	case "/v2/health":
		return a.healthHandler
	case "/v2/openapi.json":
		return a.openapi.serveJSON
	case "/v2/openapi.yaml":
		return a.openapi.serveYAML
	case "/v2/docs":
		return a.openapi.serveDocs
	}
	panic("no local handler for " + path)
}

func (a *App) handler(r Route) fiber.Handler {
	var localH fiber.Handler
	var backend *Backend
	if r.Backend == local {
		localH = a.localHandler(r.Path)
	} else {
		backend = a.cfg.Backends[r.Backend]
	}
	return func(c *fiber.Ctx) error {
		id := identity.Identity{Kind: identity.KindPublic, ClientIP: c.IP(), RequestID: web.RequestID(c)}
		// The budget this request spends (none when budget is empty).
		var budget string
		var limit int
		if r.Public() {
			switch {
			case r.Limit == LimitPublicIP:
				budget, limit = "ip:"+c.IP()+":"+r.Path, a.cfg.PublicLimitPerMinute
			case r.Limit == LimitPublicRead && a.cfg.PublicReadLimitPerMinute > 0:
				budget, limit = "ip:"+c.IP()+":read", a.cfg.PublicReadLimitPerMinute
			}
		} else {
			key, err := a.authenticate(c, r)
			if err != nil {
				return err
			}
			c.Locals(localsKeyID, key.ID)
			id.Kind = identity.KindRestricted
			if key.Live() {
				id.Kind = identity.KindLive
			}
			id.KeyID, id.SpaceID, id.Scopes, id.TrustedImporter = key.ID, key.SpaceID, key.Scopes, key.TrustedImporter
			if r.Limit == LimitKeyWrite {
				limit = a.cfg.WriteLimitPerMinute
				if key.RateLimitPerMinute > 0 {
					limit = key.RateLimitPerMinute
				}
				budget = "key:" + strconv.FormatInt(key.ID, 10) + ":write"
			} else if r.Limit == LimitKeyRead && a.cfg.ReadLimitPerMinute > 0 {
				budget, limit = "key:"+strconv.FormatInt(key.ID, 10)+":read", a.cfg.ReadLimitPerMinute
			}
		}
		// A cacheable GET is named before its budget is counted: a client
		// whose copy is current gets a 304 that costs it no budget (as
		// GitHub does) and the backends nothing.
		var named *namedRequest
		if a.cache != nil && r.Cache != nil {
			if named = a.cache.lookup(c, r, id); named != nil && named.notModified {
				return nil
			}
		}
		var decision *ratelimit.Decision
		if budget != "" {
			// Budgets of 200 or more are leased from Redis ahead of use (1 %
			// at a time), so most checks cost no round trip; smaller ones,
			// such as the default 120 writes, are counted one by one.
			d := a.cfg.Limiter.AllowLeased(c.UserContext(), budget, limit)
			a.limitHit.WithLabelValues(r.Limit, outcome(d), d.Source).Inc()
			decision = &d
		}
		if decision != nil && !decision.Allowed {
			a.setLimitHeaders(c, r.Limit, *decision)
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(decision.RetryAfterSeconds()))
			return a.pageErr(c, r, &web.Error{Status: http.StatusTooManyRequests, Code: web.CodeRateLimitExceeded,
				Message: "Rate limit exceeded; retry after the given number of seconds",
				Details: fiber.Map{"limit_per_minute": decision.Limit, "retry_after_seconds": decision.RetryAfterSeconds()}})
		}
		var err error
		switch {
		case named != nil && a.cache.serve(c, r, named):
		case localH != nil:
			err = localH(c)
		default:
			var whole *wholeBody
			if named != nil && c.Method() == fiber.MethodGet {
				whole = a.cache.whole(named)
			}
			err = a.forwardWith(c, backend, id, r.Page, whole)
			// Internal: whether the answer came from a replica.
			replica := len(c.Response().Header.Peek(web.HeaderReadReplica)) > 0
			c.Response().Header.Del(web.HeaderReadReplica)
			if named != nil && err == nil {
				a.cache.store(c, r, named, replica)
			}
		}
		if decision != nil {
			// After forwarding: the backend's response replaced ours.
			a.setLimitHeaders(c, r.Limit, *decision)
		}
		return a.pageErr(c, r, err)
	}
}

// pageErr answers an error on a page route as a small HTML page of the same
// status (a browser shows it; the envelope is for API clients), logged as
// the error handler would; any other error goes on to the error handler.
func (a *App) pageErr(c *fiber.Ctx, r Route, err error) error {
	if err == nil || !r.Page {
		return err
	}
	e := web.Classify(err)
	if e.Status >= 500 {
		a.cfg.Log.ErrorContext(c.UserContext(), "request failed", "status", e.Status, "method", c.Method(),
			"route", web.RouteTemplate(c), "request_id", web.RequestID(c), "error", err.Error())
	}
	msg := e.Message
	if e.Status == http.StatusTooManyRequests {
		msg = "Too many requests from your address; wait a minute and try again."
	}
	title := html.EscapeString(http.StatusText(e.Status))
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(e.Status).SendString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title +
		"</title></head><body><h1>" + title + "</h1><p>" + html.EscapeString(msg) + "</p></body></html>\n")
}

func outcome(d ratelimit.Decision) string {
	if d.Allowed {
		return "allowed"
	}
	return "denied"
}

// setLimitHeaders writes the budget two ways: the X-RateLimit-* headers
// clients already read, and the IETF fields of
// draft-ietf-httpapi-ratelimit-headers (-10): RateLimit-Policy, a List of
// quota-policy Items ("name";q=quota;w=window seconds), and RateLimit, the
// same policy's live state ("name";r=remaining;t=seconds until it resets).
// The policy name is the route's limit class, so a client can tell the write
// budget from the read one.
func (a *App) setLimitHeaders(c *fiber.Ctx, class string, d ratelimit.Decision) {
	reset := d.RetryAfterSeconds()
	h := &c.Response().Header
	var b [64]byte
	h.SetBytesV("X-RateLimit-Limit", strconv.AppendInt(b[:0], int64(d.Limit), 10))
	h.SetBytesV("X-RateLimit-Remaining", strconv.AppendInt(b[:0], int64(d.Remaining), 10))
	h.SetBytesV("X-RateLimit-Reset", strconv.AppendInt(b[:0], int64(reset), 10))
	h.SetBytesV("RateLimit-Policy", appendPolicyItem(b[:0], class, 'q', d.Limit, 'w', int(a.cfg.Limiter.Window()/time.Second)))
	h.SetBytesV("RateLimit", appendPolicyItem(b[:0], class, 'r', d.Remaining, 't', reset))
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

const localsKeyID = "gateway.key_id"

// presentedKey picks the key from the request. Precedence when several are
// sent: X-API-Key, then Authorization: Bearer, then ?api_key=.
func presentedKey(c *fiber.Ctx) string {
	if k := c.Get("X-API-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	if auth := c.Get(fiber.HeaderAuthorization); auth != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(auth), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return "\x00malformed" // an Authorization header of another scheme is not a key
	}
	return c.Query("api_key")
}

func (a *App) authenticate(c *fiber.Ctx, r Route) (*keybus.Key, error) {
	key, err := a.cfg.Keys.Authenticate(c.UserContext(), presentedKey(c))
	switch {
	case errors.Is(err, keybus.ErrMissing):
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="coworkjobs"`)
		return nil, web.Unauthorized("An API key is required: send it in the X-API-Key header")
	case errors.Is(err, keybus.ErrMalformed), errors.Is(err, keybus.ErrUnknown), errors.Is(err, keybus.ErrRevoked):
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="coworkjobs", error="invalid_token"`)
		return nil, web.Unauthorized("The API key is invalid or has been revoked")
	case err != nil:
		a.cfg.Log.ErrorContext(c.UserContext(), "authenticate", "error", err, "request_id", web.RequestID(c))
		return nil, &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "Authentication is temporarily unavailable; retry shortly"}
	}
	if !key.HasAnyScope(r.Scopes) {
		return nil, web.Forbidden("This API key lacks a scope for " + r.Method + " " + r.Path + "; one of: " + strings.Join(r.Scopes, ", "))
	}
	if r.Write && !key.Live() {
		return nil, web.Forbidden("Restricted keys (svc_rstr_) are read-only")
	}
	return key, nil
}

// securityHeaders are set deliberately on every answer: the API serves JSON
// only, so nothing may be sniffed, framed or leak a referrer.
func securityHeaders(c *fiber.Ctx) error {
	err := c.Next()
	// Set after the handler: a forwarded response replaces the headers that
	// were set before it.
	h := &c.Response().Header
	h.SetCanonical(headerNosniff[0], headerNosniff[1])
	h.SetCanonical(headerDeny[0], headerDeny[1])
	h.SetCanonical(headerNoReferrer[0], headerNoReferrer[1])
	if len(h.Peek(fiber.HeaderCacheControl)) == 0 {
		h.SetCanonical(headerNoStore[0], headerNoStore[1])
	}
	return err
}

// The security headers as canonical bytes: SetCanonical skips normalising
// the name and converting both on every answer.
var (
	headerNosniff    = [2][]byte{[]byte(fiber.HeaderXContentTypeOptions), []byte("nosniff")}
	headerDeny       = [2][]byte{[]byte(fiber.HeaderXFrameOptions), []byte("DENY")}
	headerNoReferrer = [2][]byte{[]byte(fiber.HeaderReferrerPolicy), []byte("no-referrer")}
	headerNoStore    = [2][]byte{[]byte(fiber.HeaderCacheControl), []byte("no-store")}
)

// keepCORSHeaders puts back the CORS headers the cors middleware set before
// the handler: a forwarded response replaces every header set before it, and
// without them a browser may not read any backend's answer cross-origin.
func keepCORSHeaders(c *fiber.Ctx) error {
	type header struct{ k, v string }
	var kept []header
	c.Response().Header.VisitAll(func(k, v []byte) {
		if name := string(k); strings.HasPrefix(name, "Access-Control-") || name == fiber.HeaderVary {
			kept = append(kept, header{name, string(v)})
		}
	})
	err := c.Next()
	h := &c.Response().Header
	for _, kv := range kept {
		switch cur := string(h.Peek(kv.k)); {
		case cur == "":
			h.Set(kv.k, kv.v)
		case kv.k == fiber.HeaderVary && !strings.Contains(strings.ToLower(cur), strings.ToLower(kv.v)):
			h.Set(kv.k, cur+", "+kv.v) // the backend's Vary and the origin's both hold
		}
	}
	return err
}

// accessLog writes one line per request: route template (never the raw path
// or query, which may carry an api_key), status, duration, key id.
func (a *App) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		status = web.Classify(err).Status
	}
	keyID, _ := c.Locals(localsKeyID).(int64)
	a.cfg.Log.LogAttrs(c.UserContext(), slog.LevelInfo, "request",
		slog.String("method", c.Method()), slog.String("route", web.RouteTemplate(c)),
		slog.Int("status", status), slog.Int64("duration_us", time.Since(start).Microseconds()),
		slog.String("request_id", web.RequestID(c)), slog.Int64("key_id", keyID))
	return err
}

// limited reports whether requests on r are counted against a budget with
// this configuration.
func (a *App) limited(r Route) bool {
	switch r.Limit {
	case LimitKeyRead:
		return a.cfg.ReadLimitPerMinute > 0
	case LimitPublicRead:
		return a.cfg.PublicReadLimitPerMinute > 0
	}
	return r.Limit != LimitNone
}

// info answers GET /v2 from the route table.
func (a *App) info(c *fiber.Ctx) error {
	type routeInfo struct {
		Method      string   `json:"method"`
		Path        string   `json:"path"`
		Auth        string   `json:"auth"`
		Scopes      []string `json:"scopes"`
		Write       bool     `json:"write"`
		RateLimited bool     `json:"rate_limited"`
	}
	routes := make([]routeInfo, 0, len(Table))
	for _, r := range Table {
		ri := routeInfo{Method: r.Method, Path: DocPath(r.Path), Auth: "public", Scopes: []string{}, Write: r.Write, RateLimited: a.limited(r)}
		if !r.Public() {
			ri.Auth, ri.Scopes = "key", r.Scopes
		}
		routes = append(routes, ri)
	}
	base := strings.TrimRight(a.cfg.PublicBaseURL, "/")
	return web.OK(c, http.StatusOK, fiber.Map{
		"name": "coworkjobs API", "version": a.cfg.Version,
		"openapi_url": base + "/v2/openapi.json", "routes": routes,
	})
}

// RunBackground starts the gateway's background work (health polling,
// resolving the addresses of backends balanced by DNS, and writing the
// shared response cache's entries).
func (a *App) RunBackground(ctx context.Context) {
	go a.health.run(ctx)
	if a.cache != nil && a.cache.shared != nil {
		go a.cache.shared.run(ctx)
	}
	for _, b := range a.cfg.Backends {
		go b.run(ctx)
	}
}

// DocPath writes a Fiber route path as the OpenAPI document does:
// /v2/jobs/:id_job<int> is /v2/jobs/{id_job}.
func DocPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			name, _, _ := strings.Cut(s[1:], "<")
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}
