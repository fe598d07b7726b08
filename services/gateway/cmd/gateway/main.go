// Command gateway is the only public entry of coworkjobs: it authenticates API
// keys, enforces scopes and rate limits, and forwards to the backends.
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/coworkjobs/coworkjobs/api"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/dashapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/gatewayapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/proxy"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus/stores/dashdb"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus/stores/keydb"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
	"github.com/coworkjobs/coworkjobs/services/gateway/migrations"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "2.0.0-dev"

const schema = "gateway"

type appConfig struct {
	config.API

	RedisURL       string `env:"REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
	RedisKeyPrefix string `env:"REDIS_KEY_PREFIX" envDefault:"cj:rl:"`

	JobsURL      string `env:"JOBS_URL" envDefault:"http://127.0.0.1:8081"`
	DirectoryURL string `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	ContentURL   string `env:"CONTENT_URL" envDefault:"http://127.0.0.1:8083"`
	CommunityURL string `env:"COMMUNITY_URL" envDefault:"http://127.0.0.1:8084"`

	UpstreamTimeout  time.Duration `env:"UPSTREAM_TIMEOUT" envDefault:"4s"`
	UpstreamMaxConns int           `env:"UPSTREAM_MAX_CONNS" envDefault:"256"`
	// UpstreamMaxConnAge bounds a pooled backend connection's life, so that
	// replicas added behind a Service get their share (BackendOptions).
	UpstreamMaxConnAge time.Duration `env:"UPSTREAM_MAX_CONN_AGE" envDefault:"10s"`
	// UpstreamBalance is connection (pool to the URL's host, e.g. a Service's
	// cluster IP) or dns (resolve the host every UpstreamResolveInterval, e.g.
	// a headless Service, and balance each request over its addresses).
	UpstreamBalance         string        `env:"UPSTREAM_BALANCE" envDefault:"connection"`
	UpstreamResolveInterval time.Duration `env:"UPSTREAM_RESOLVE_INTERVAL" envDefault:"1s"`

	WriteLimitPerMinute  int `env:"WRITE_RATE_LIMIT_PER_MINUTE" envDefault:"120"`
	PublicLimitPerMinute int `env:"PUBLIC_POST_RATE_LIMIT_PER_MINUTE" envDefault:"10"`
	// BatchRowsPerWrite: POST /v2/jobs/batch spends its rows divided by this
	// (rounded up) of the write budget.
	BatchRowsPerWrite int `env:"BATCH_ROWS_PER_WRITE" envDefault:"10"`
	// Read budgets (0 turns one off): per key for keyed GETs, per client IP
	// for public GETs served by a backend.
	ReadLimitPerMinute       int           `env:"READ_RATE_LIMIT_PER_MINUTE" envDefault:"1200"`
	PublicReadLimitPerMinute int           `env:"PUBLIC_READ_RATE_LIMIT_PER_MINUTE" envDefault:"600"`
	RateLimitWindow          time.Duration `env:"RATE_LIMIT_WINDOW" envDefault:"60s"`
	KeyCacheTTL              time.Duration `env:"KEY_CACHE_TTL" envDefault:"10s"`

	PublicBaseURL    string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	CORSAllowOrigins string `env:"CORS_ALLOW_ORIGINS" envDefault:"*"`
	AccessLog        bool   `env:"ACCESS_LOG" envDefault:"true"`
	// ResponseCacheMB turns on ETags, 304s and the response cache of the
	// cacheable GETs; 0: off. It is the memory store's size per gateway
	// replica, in mebibytes; both stores keep no answer above an eighth of
	// it. Turn it on only where every backend process and tool has REDIS_URL
	// (they bump the change versions the cache is keyed by).
	ResponseCacheMB int `env:"RESPONSE_CACHE_MB" envDefault:"0"`
	// ResponseCacheStore is memory (per replica) or redis (shared, entries
	// kept ResponseCacheTTL).
	ResponseCacheStore string        `env:"RESPONSE_CACHE_STORE" envDefault:"memory"`
	ResponseCacheTTL   time.Duration `env:"RESPONSE_CACHE_TTL" envDefault:"10m"`

	// KeyMaxRateLimit is the ceiling on rate_limit_per_minute of the keys
	// owners create (/v2/keys, the dashboard).
	KeyMaxRateLimit int `env:"KEY_MAX_RATE_LIMIT_PER_MINUTE" envDefault:"600"`
	// The dashboard's sign-in mails and sessions.
	SMTPURL          string        `env:"SMTP_URL" envDefault:"smtp://127.0.0.1:1025"`
	DashboardFrom    string        `env:"DASHBOARD_MAIL_FROM" envDefault:"coworkjobs <dashboard@coworkjobs.example>"`
	DashboardSession time.Duration `env:"DASHBOARD_SESSION_TTL" envDefault:"12h"`
	DashboardLinks   int           `env:"DASHBOARD_LINKS_PER_HOUR" envDefault:"5"`
	DashboardResend  time.Duration `env:"DASHBOARD_LINK_RESEND_EVERY" envDefault:"2m"`
}

func (c appConfig) Validate() error {
	errs := []error{c.API.Validate()}
	if c.BatchRowsPerWrite < 1 {
		errs = append(errs, errors.New("BATCH_ROWS_PER_WRITE must be at least 1"))
	}
	if c.WriteLimitPerMinute < 1 || c.PublicLimitPerMinute < 1 {
		errs = append(errs, errors.New("rate limits must be positive"))
	}
	if c.ReadLimitPerMinute < 0 || c.PublicReadLimitPerMinute < 0 {
		errs = append(errs, errors.New("read rate limits must not be negative (0 turns one off)"))
	}
	if c.RateLimitWindow < time.Second {
		errs = append(errs, errors.New("RATE_LIMIT_WINDOW must be at least 1s"))
	}
	if c.KeyCacheTTL < 0 {
		errs = append(errs, errors.New("KEY_CACHE_TTL must not be negative"))
	}
	if c.UpstreamTimeout <= 0 || c.UpstreamTimeout >= c.Web.RequestTimeout+time.Second {
		errs = append(errs, errors.New("UPSTREAM_TIMEOUT must be positive and not exceed REQUEST_TIMEOUT"))
	}
	if c.UpstreamMaxConns < 1 {
		errs = append(errs, errors.New("UPSTREAM_MAX_CONNS must be positive"))
	}
	if c.UpstreamBalance != proxy.BalanceConnection && c.UpstreamBalance != proxy.BalanceDNS {
		errs = append(errs, fmt.Errorf("UPSTREAM_BALANCE must be %s or %s", proxy.BalanceConnection, proxy.BalanceDNS))
	}
	if c.UpstreamResolveInterval < 100*time.Millisecond {
		errs = append(errs, errors.New("UPSTREAM_RESOLVE_INTERVAL must be at least 100ms"))
	}
	if c.ResponseCacheMB < 0 || c.ResponseCacheMB > 4096 {
		errs = append(errs, errors.New("RESPONSE_CACHE_MB must be between 0 (off) and 4096"))
	}
	if c.ResponseCacheStore != responsecache.StoreMemory && c.ResponseCacheStore != responsecache.StoreRedis {
		errs = append(errs, fmt.Errorf("RESPONSE_CACHE_STORE must be %s or %s", responsecache.StoreMemory, responsecache.StoreRedis))
	}
	if c.ResponseCacheTTL < time.Second {
		errs = append(errs, errors.New("RESPONSE_CACHE_TTL must be at least 1s"))
	}
	if c.KeyMaxRateLimit < 1 {
		errs = append(errs, errors.New("KEY_MAX_RATE_LIMIT_PER_MINUTE must be positive"))
	}
	if c.DashboardSession < time.Minute || c.DashboardSession > 30*24*time.Hour {
		errs = append(errs, errors.New("DASHBOARD_SESSION_TTL must be between 1m and 720h"))
	}
	if c.DashboardResend < time.Second || c.DashboardResend > time.Hour {
		errs = append(errs, errors.New("DASHBOARD_LINK_RESEND_EVERY must be between 1s and 1h"))
	}
	if c.DashboardLinks < 1 {
		errs = append(errs, errors.New("DASHBOARD_LINKS_PER_HOUR must be positive"))
	}
	errs = append(errs, config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL))
	if c.UpstreamMaxConnAge < 0 {
		errs = append(errs, errors.New("UPSTREAM_MAX_CONN_AGE must not be negative (0 keeps connections for ever)"))
	}
	return errors.Join(errs...)
}

// gatewayConcurrency is the gateway's HTTP_CONCURRENCY default, below the backends':
// each connection served holds memory (make bench overload rows, gateway RssAnon target).
const gatewayConcurrency = 96

// spec is the gateway's start-up: its own HTTP_CONCURRENCY default (an
// explicit value wins), and the public edge's tracing (web.PublicEndpoint).
func spec() service.Spec {
	return service.Spec{Name: schema, Version: version, Schema: schema, Migrations: migrations.FS,
		Defaults:   map[string]string{"HTTP_CONCURRENCY": strconv.Itoa(gatewayConcurrency)},
		WebOptions: []web.Option{web.PublicEndpoint()}}
}

func main() { service.Serve(spec(), wire) }

// wire builds the gateway on p: Redis, the backends, the keys and the routes.
func wire(ctx context.Context, p *service.Process, cfg *appConfig) error {
	log := p.Log
	rdb, err := redisx.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	p.Defer(func() { _ = rdb.Close() })
	if err := telemetry.InstrumentRedis(rdb); err != nil {
		return fmt.Errorf("redis tracing: %w", err)
	}
	// The change versions and the shared cache's entries get an untraced client:
	// their batches (libs/changes.Coalesced) have no request span (make bench row a$).
	crdb, err := redisx.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	p.Defer(func() { _ = crdb.Close() })
	// Asked every second, so that the gateway knows Redis is away (and that
	// it is back, moving the epoch before its cache trusts a version) without
	// waiting for a request; redis_away says so.
	versions := changes.New(crdb, cfg.RedisKeyPrefix)
	p.Metrics.Registry.MustRegister(changes.AwayGauge(versions))
	p.Go(func(ctx context.Context) error { versions.Watch(ctx, time.Second); return nil })
	backends := map[string]*proxy.Backend{}
	for name, u := range map[string]string{
		routes.BackendJobs: cfg.JobsURL, routes.BackendDirectory: cfg.DirectoryURL,
		routes.BackendContent: cfg.ContentURL, routes.BackendCommunity: cfg.CommunityURL,
	} {
		b, err := proxy.NewBackend(name, u, proxy.BackendOptions{
			Timeout: cfg.UpstreamTimeout, MaxConns: cfg.UpstreamMaxConns, MaxConnAge: cfg.UpstreamMaxConnAge,
			Balance: cfg.UpstreamBalance, ResolveEvery: cfg.UpstreamResolveInterval, Log: log})
		if err != nil {
			return err
		}
		backends[name] = b
	}

	keys := keybus.New(keydb.New(p.Pool), log, cfg.KeyCacheTTL).WithRules(keybus.Rules{MaxRateLimit: cfg.KeyMaxRateLimit})
	dash, err := dashboard(p, cfg, keys)
	if err != nil {
		return err
	}
	gw, err := gatewayapp.Routes(p.API.App, gatewayapp.Config{
		Log: log, Keys: keys, Codec: p.Codec, Redis: rdb, Backends: backends, Registry: p.Metrics.Registry,
		Changes: versions, Cache: responsecache.Config{
			Store: cfg.ResponseCacheStore, MaxBytes: uint64(cfg.ResponseCacheMB) << 20, TTL: cfg.ResponseCacheTTL},
		Limiter:             ratelimit.New(rdb, cfg.RedisKeyPrefix, cfg.RateLimitWindow, log),
		WriteLimitPerMinute: cfg.WriteLimitPerMinute, PublicLimitPerMinute: cfg.PublicLimitPerMinute,
		ReadLimitPerMinute: cfg.ReadLimitPerMinute, PublicReadLimitPerMinute: cfg.PublicReadLimitPerMinute,
		BatchRowsPerWrite: cfg.BatchRowsPerWrite, PublicBaseURL: cfg.PublicBaseURL, Version: version, OpenAPIYAML: api.OpenAPIYAML, Docs: api.Docs,
		AccessLog: cfg.AccessLog, CORSAllowOrigins: cfg.CORSAllowOrigins, Dashboard: dash,
	})
	if err != nil {
		return err
	}
	gw.RunBackground(ctx)
	// Waited for, so that its last flush comes before the pool closes.
	p.Go(func(ctx context.Context) error {
		keys.RunLastUsedFlusher(ctx, 10*time.Second)
		return nil
	})
	return nil
}

// dashboard wires the space dashboard: its sign-in rules over the gateway
// schema, the directory and jobs backends it reads, and the relay that
// mails the sign-in links from their outbox (retried while SMTP is away).
func dashboard(p *service.Process, cfg *appConfig, keys *keybus.Business) (*dashapp.App, error) {
	sender, err := mailer.New(cfg.SMTPURL, cfg.DashboardFrom)
	if err != nil {
		return nil, err
	}
	backends := dashapp.NewBackends(cfg.DirectoryURL, cfg.JobsURL, p.Codec, cfg.UpstreamTimeout)
	store := dashdb.New(p.Pool)
	// The links' key is derived from the identity secret (HMAC with a label
	// inside dashbus), so no new secret has to be deployed.
	signIn, err := dashbus.New(dashbus.Config{Secret: []byte(cfg.IdentitySecret), BaseURL: cfg.PublicBaseURL,
		SessionTTL: cfg.DashboardSession, LinksPerHour: cfg.DashboardLinks,
		ResendEvery: cfg.DashboardResend}, store, backends, sender, p.Log)
	if err != nil {
		return nil, err
	}
	relay := &outbox.Relay[int64]{Table: store.MailOutbox(), Log: p.Log, Metrics: outbox.NewMetrics(p.Metrics.Registry),
		// A link lives 15 minutes: retries past that would mail a dead link.
		MaxBackoff: time.Minute,
		Deliver:    func(ctx context.Context, m outbox.Message[int64]) error { return signIn.DeliverSignIn(ctx, m.Payload) }}
	p.Go(relay.Run)
	p.Go(func(ctx context.Context) error {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if err := signIn.Purge(ctx); err != nil && ctx.Err() == nil {
				p.Log.Warn("purge dashboard sign-ins", "error", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
	return dashapp.New(dashapp.Config{Log: p.Log, SignIn: signIn, Keys: keys, Backends: backends, BaseURL: cfg.PublicBaseURL})
}
