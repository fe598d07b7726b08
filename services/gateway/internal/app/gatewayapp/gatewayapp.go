// Package gatewayapp assembles the gateway from its rooms: the edge
// middleware (mid), the route table (routes), authentication (auth), the
// rate-limit budgets (budget), the response cache (responsecache), the
// proxy to the backends (proxy), health (health) and the OpenAPI document
// (openapidoc). handler.go is a request's way through them.
package gatewayapp

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/budget"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/dashapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/health"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/keyapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/mid"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/openapidoc"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/proxy"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache/stores/memstore"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache/stores/redisstore"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
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
	Backends map[string]*proxy.Backend
	// Registry receives the gateway's own instruments (nil: none).
	Registry *prometheus.Registry

	WriteLimitPerMinute  int
	PublicLimitPerMinute int
	// Read budgets per minute; 0 turns that limit off.
	ReadLimitPerMinute       int
	PublicReadLimitPerMinute int
	// BatchRowsPerWrite: the rows of a batch that cost one write (budget).
	BatchRowsPerWrite int
	PublicBaseURL     string
	Version           string
	OpenAPIYAML       []byte
	// Docs holds docs/index.html and docs/redoc.standalone.js (api.Docs).
	Docs      fs.FS
	AccessLog bool
	// CORSAllowOrigins is a comma-separated list, or "*".
	CORSAllowOrigins string
	// Changes are the change versions the backends bump. With
	// Cache.MaxBytes > 0 the cacheable GETs (Route.Cache) are named (ETag,
	// 304) and cached in Cache.Store.
	Changes *changes.Versions
	Cache   responsecache.Config
	// Dashboard serves /dashboard (nil: its pages answer 404).
	Dashboard *dashapp.App
}

// App holds the gateway's rooms.
type App struct {
	cfg     Config
	auth    *auth.Authenticator
	budgets *budget.Budgets
	health  *health.Checker
	cache   *responsecache.Cache // nil: off
	// background is the work RunBackground starts.
	background []func(context.Context)
}

// Routes registers the route table on app.
func Routes(app *fiber.App, cfg Config) (*App, error) {
	docs, err := openapidoc.Load(cfg.OpenAPIYAML, cfg.Docs)
	if err != nil {
		return nil, err
	}
	probes := make(map[string]health.Backend, len(cfg.Backends))
	for name, b := range cfg.Backends {
		probes[name] = b
	}
	a := &App{
		cfg:  cfg,
		auth: auth.New(cfg.Keys, cfg.Log),
		budgets: budget.New(budget.Config{Limiter: cfg.Limiter,
			WriteLimitPerMinute: cfg.WriteLimitPerMinute, PublicLimitPerMinute: cfg.PublicLimitPerMinute,
			ReadLimitPerMinute: cfg.ReadLimitPerMinute, PublicReadLimitPerMinute: cfg.PublicReadLimitPerMinute,
			BatchRowsPerWrite: cfg.BatchRowsPerWrite,
		}, cfg.Registry),
		health: health.New(health.Config{Redis: cfg.Redis, Backends: probes, Limiter: cfg.Limiter}, cfg.Registry),
	}
	a.background = append(a.background, a.health.Run)
	if cfg.Cache.MaxBytes > 0 && cfg.Changes != nil {
		a.cache = a.newCache()
	}
	for name, b := range cfg.Backends {
		if cfg.Registry != nil {
			cfg.Registry.MustRegister(proxy.EndpointsGauge(name, b))
		}
		a.background = append(a.background, b.Run)
	}
	app.Use(mid.CORS(cfg.CORSAllowOrigins), mid.KeepCORSHeaders)
	app.Use(mid.SecurityHeaders)
	if cfg.AccessLog {
		app.Use(mid.AccessLog(cfg.Log))
	}
	local := map[string]fiber.Handler{
		"GET /v2":              routes.Info(cfg.Version, cfg.PublicBaseURL, a.budgets.Limited),
		"GET /v2/health":       a.health.Handler,
		"GET /v2/openapi.json": docs.ServeJSON,
		"GET /v2/openapi.yaml": docs.ServeYAML,
		"GET /v2/docs":         docs.ServeDocs,
		"GET /robots.txt":      routes.Robots(cfg.PublicBaseURL),
	}
	maps.Copy(local, keyapp.New(cfg.Keys).Handlers())
	if cfg.Dashboard != nil {
		maps.Copy(local, cfg.Dashboard.Handlers())
	} else {
		maps.Copy(local, dashapp.Unconfigured())
	}
	for _, r := range slices.Concat(routes.Table, routes.Pages) {
		var h fiber.Handler
		if r.Backend == routes.Local {
			if h = local[r.Method+" "+r.Path]; h == nil {
				panic("no local handler for " + r.Method + " " + r.Path)
			}
		} else if _, ok := cfg.Backends[r.Backend]; !ok {
			return nil, fmt.Errorf("route %s %s: no backend %q configured", r.Method, r.Path, r.Backend)
		}
		h = a.handler(r, h)
		app.Add(r.Method, r.Path, h)
		if r.Method == fiber.MethodGet {
			// HEAD is GET without the body (RFC 9110): same key, scope and
			// backend; the backends' Fiber GET routes answer HEAD too.
			app.Add(fiber.MethodHead, r.Path, h)
		}
	}
	// The renderer script of the reference page: a static asset, not an API route.
	app.Get("/v2/docs/redoc.standalone.js", docs.ServeRenderer)
	app.Get("/v2/docs/", openapidoc.RedirectDocs)
	return a, nil
}

// newCache builds the response cache over the store cfg.Cache names.
func (a *App) newCache() *responsecache.Cache {
	cc := a.cfg.Cache
	var store responsecache.Storer
	if cc.Store == responsecache.StoreRedis {
		shared := redisstore.New(a.cfg.Changes, cc.TTL, a.cfg.Registry)
		a.background = append(a.background, shared.Run)
		store = shared
	} else {
		store = memstore.New(cc.MaxBytes, a.cfg.Registry)
	}
	return responsecache.New(a.cfg.Changes, store, cc, a.cfg.Version, a.cfg.Registry)
}

// RunBackground starts the gateway's background work (health polling,
// resolving the addresses of backends balanced by DNS, and writing the
// shared response cache's entries).
func (a *App) RunBackground(ctx context.Context) {
	for _, run := range a.background {
		go run(ctx)
	}
}
