// Package service starts and stops every command the same way, so that a
// main.go only declares its configuration and wires its own dependencies:
// the configuration from the environment (LOG_LEVEL with it), tracing, the
// database pool with its schema migrated (MIGRATE_ONLY ends an API there),
// the admin port (/metrics, /livez, /readyz over every check) and pprof, and
// on SIGINT or SIGTERM a shutdown in reverse order of start.
package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Main builds the JSON logger of command name, calls run and exits 1,
// logging why, when run fails. The logger is at info until Run or RunTool
// has read LOG_LEVEL with the rest of the configuration, so a configuration
// error is always logged.
func Main(name string, run func(context.Context, *slog.Logger) error) {
	log := logx.New(name, "info")
	if err := run(context.Background(), log); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

// Serve is the main of a service (an API or a worker): Main with the logger
// of spec.Name, then Run, so that the command's main is its wiring.
func Serve[C any, PC interface {
	*C
	Config
}](spec Spec, wire func(context.Context, *Process, *C) error) {
	Main(spec.Name, func(ctx context.Context, log *slog.Logger) error { return Run[C, PC](ctx, log, spec, wire) })
}

// SeedCommand is one command of a seeder, named by its first argument.
type SeedCommand struct {
	// Args reads the arguments after the command; nil: it takes none.
	Args func(args []string) error
	// Load writes the data through the pool of the spec's schema, migrated.
	Load func(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error
}

// Seed is the main of a seeder, a tool whose configuration is config.Common
// (DATABASE_URL, DB_MAX_CONNS, LOG_LEVEL): Main with the logger of name,
// then args (the command line after the program's name) choose one of
// commands, before anything connects; a command line that names none of
// them, or whose arguments its command refuses, prints usage and ends the
// seeder. Then RunTool gives the command's Load the pool of spec.Schema,
// migrated.
func Seed(name string, spec Spec, usage string, args []string, commands map[string]SeedCommand) {
	Main(name, func(ctx context.Context, log *slog.Logger) error {
		cmd, err := seedCommand(args, commands)
		if err != nil {
			fmt.Fprintln(os.Stderr, usage)
			return err
		}
		return RunTool(ctx, log, spec, func(ctx context.Context, pool *pgxpool.Pool, _ *config.Common) error { return cmd.Load(ctx, log, pool) })
	})
}

// seedCommand picks the command args name and lets it read the rest.
func seedCommand(args []string, commands map[string]SeedCommand) (SeedCommand, error) {
	if len(args) == 0 {
		return SeedCommand{}, errors.New("missing command")
	}
	cmd, ok := commands[args[0]]
	switch {
	case !ok:
		return SeedCommand{}, fmt.Errorf("unknown command %q", args[0])
	case cmd.Args != nil:
		if err := cmd.Args(args[1:]); err != nil {
			return SeedCommand{}, fmt.Errorf("%s: %w", args[0], err)
		}
	case len(args) > 1:
		return SeedCommand{}, fmt.Errorf("%s takes no arguments", args[0])
	}
	return cmd, nil
}

// Config is a pointer to a command's configuration struct, which embeds
// config.Base, or config.Common when the command has a schema, or
// config.API for an HTTP service (a worker adds config.Admin).
type Config interface {
	BaseSettings() *config.Base
}

// Spec says what the bootstrap needs to know of a command.
type Spec struct {
	// Name is the default tracing service.name (OTEL_SERVICE_NAME wins) and
	// the API server's name.
	Name string
	// Version is the tracing service.version; empty leaves it out.
	Version string
	// Schema is the command's PostgreSQL schema, migrated from Migrations
	// (files at its root) before the command's own code runs; empty: no
	// database.
	Schema     string
	Migrations fs.FS
	// Defaults are the command's own defaults of environment variables
	// where they differ from the struct tags' (config.Parse).
	Defaults map[string]string
	// WebOptions go to the API server (web.New).
	WebOptions []web.Option
	// Timeout bounds a tool's whole run (RunTool); 0 is none.
	Timeout time.Duration
	// Changes are the scopes (libs/changes) the command writes. With
	// REDIS_URL set, a service gets Process.Changes and keeps the scopes'
	// counters in existence; a tool bumps them once it has succeeded.
	Changes []string
	// PoolParams are PostgreSQL settings every connection of the command's
	// pools (primary and replica) starts with (pg.Options.Params).
	PoolParams map[string]string
}

// Process is what a service's wiring gets from Run: its dependencies, and
// where it registers its background work, readiness checks and what to
// close.
type Process struct {
	Log *slog.Logger
	// Pool is nil when the Spec names no schema.
	Pool *pgxpool.Pool
	// Reads routes the reads a service allows on a replica: to the pool of
	// DATABASE_READ_URL when it is set and current, else to Pool (nil
	// without a schema).
	Reads   *pg.Reads
	Metrics *metrics.Metrics
	// API is the HTTP server of a command whose configuration embeds
	// config.API (nil otherwise): its /readyz holds the checks (the pool's
	// first), every request is measured, and the admin port answers /readyz
	// with its readiness, draining included. The wiring adds the routes; Run
	// adds web's fallback after them and serves it.
	API *web.Server
	// Codec verifies (and the gateway signs) the identity the gateway
	// forwards: an API's, from INTERNAL_IDENTITY_SECRET.
	Codec *identity.Codec
	// Changes bumps the change versions of Spec.Changes after a write (nil
	// without REDIS_URL or scopes: bumps nothing).
	Changes *changes.Versions

	ctx                  context.Context // the group's: ends on a signal or a failure
	group                *errgroup.Group
	checks               map[string]metrics.Check
	adminAddr, pprofAddr string
	closers              []func()
}

// Run starts a service (an API or a worker). It reads its configuration C
// from the environment and sets the logger's level, sets up tracing, opens
// the pool and migrates spec.Schema (and returns there when MIGRATE_ONLY is
// set), builds an API's server, then lets wire build the service on the
// Process. Once wire returns, the API server and the admin port serve beside
// the work wire started with Process.Go, until SIGINT or SIGTERM or the
// first of them fails; then what wire deferred is closed in reverse order,
// then the pool, then tracing is flushed.
func Run[C any, PC interface {
	*C
	Config
}](ctx context.Context, log *slog.Logger, spec Spec, wire func(context.Context, *Process, *C) error) error {
	var cfg C
	if err := configure(log, PC(&cfg), spec.Defaults); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	shutdownTracing, err := telemetry.Setup(ctx, spec.Name, spec.Version, log)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	pool, err := open(ctx, log, PC(&cfg), spec, telemetry.PgxTracer())
	if err != nil {
		return err
	}
	if pool != nil {
		defer pool.Close()
	}
	api, isAPI := any(&cfg).(interface{ APISettings() *config.API })
	if isAPI && api.APISettings().MigrateOnly {
		log.Info("migrations applied; MIGRATE_ONLY is set, exiting")
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	p := &Process{Log: log, Pool: pool, Metrics: metrics.New(), ctx: ctx, group: g, checks: map[string]metrics.Check{}}
	defer p.close()
	if pool != nil {
		p.Metrics.Registry.MustRegister(pg.NewPoolCollector(pool))
		p.AddCheck("postgres", pg.Check(pool))
		replica, err := openReplica(ctx, PC(&cfg), spec, telemetry.PgxTracer())
		if err != nil {
			return err
		}
		if replica != nil {
			p.Defer(replica.Close)
		}
		p.Reads = pg.NewReads(pool, replica, log)
		p.Metrics.Registry.MustRegister(p.Reads.Collector())
		// No readiness check: a replica that is down sends reads to the primary.
		p.Go(func(ctx context.Context) error { return p.Reads.Watch(ctx, time.Second) })
	}
	if p.Changes, err = openChanges(PC(&cfg), spec); err != nil {
		return err
	}
	if p.Changes != nil {
		// A new release (or a migration) may answer differently from the one
		// before: what was cached under the old versions goes. Not fatal: a
		// Redis that is down now is retried by Keep, and until then no
		// reader names anything it cannot read the versions of.
		if err := p.Changes.Bump(ctx, spec.Changes...); err != nil {
			log.Warn("change versions not bumped at start", "error", err)
		}
		p.Defer(func() { _ = p.Changes.Close() })
		p.Go(func(ctx context.Context) error { p.Changes.Keep(ctx, 5*time.Second, spec.Changes...); return nil })
		p.Metrics.Registry.MustRegister(changes.AwayGauge(p.Changes))
	}
	if a, ok := any(&cfg).(interface{ AdminSettings() *config.Admin }); ok {
		p.adminAddr, p.pprofAddr = a.AdminSettings().AdminAddr, a.AdminSettings().PprofAddr
	}
	if isAPI {
		if err := p.newAPI(api.APISettings(), spec); err != nil {
			return err
		}
	}
	if err := wire(ctx, p, &cfg); err != nil {
		cancel()
		_ = g.Wait()
		return err
	}
	p.serve()
	return g.Wait()
}

// RunTool runs a one-shot command or a development tool (a seeder, an
// operator's command, the mail catcher): it reads its configuration C and
// sets the logger's level, opens the pool and migrates spec.Schema (pool is
// nil without one), and runs fn until it returns, SIGINT or SIGTERM, or
// spec.Timeout. No tracing, no admin port.
func RunTool[C any, PC interface {
	*C
	Config
}](ctx context.Context, log *slog.Logger, spec Spec, fn func(context.Context, *pgxpool.Pool, *C) error) error {
	var cfg C
	if err := configure(log, PC(&cfg), spec.Defaults); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	pool, err := open(ctx, log, PC(&cfg), spec, nil)
	if err != nil {
		return err
	}
	if pool != nil {
		defer pool.Close()
	}
	v, err := openChanges(PC(&cfg), spec)
	if err != nil {
		return err
	}
	defer func() { _ = v.Close() }()
	if err := fn(ctx, pool, &cfg); err != nil {
		return err
	}
	// What the tool wrote is committed: readers must not be served what
	// was cached before it.
	return v.Bump(ctx, spec.Changes...)
}

// openChanges opens the change versions of spec.Changes on REDIS_URL; nil
// when either is empty.
func openChanges(cfg Config, spec Spec) (*changes.Versions, error) {
	c, ok := cfg.(interface{ CommonSettings() *config.Common })
	if !ok || len(spec.Changes) == 0 || c.CommonSettings().RedisURL == "" {
		return nil, nil
	}
	rdb, err := redisx.Open(c.CommonSettings().RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return changes.New(rdb, c.CommonSettings().RedisKeyPrefix), nil
}

func configure(log *slog.Logger, cfg Config, defaults map[string]string) error {
	if err := config.Parse(cfg, defaults); err != nil {
		return err
	}
	// A logger not made by logx (a tool's silent one) keeps its level.
	_ = logx.SetLevel(log, cfg.BaseSettings().LogLevel)
	return nil
}

// open opens the pool of spec.Schema and migrates it; nil without a schema.
func open(ctx context.Context, log *slog.Logger, cfg Config, spec Spec, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	if spec.Schema == "" {
		return nil, nil
	}
	c, ok := cfg.(interface{ CommonSettings() *config.Common })
	if !ok {
		return nil, fmt.Errorf("schema %s: the configuration does not embed config.Common", spec.Schema)
	}
	db := c.CommonSettings()
	pool, err := pg.Open(ctx, db.DatabaseURL, spec.Schema, pg.Options{MaxConns: db.DBMaxConns, Tracer: tracer, Params: spec.PoolParams})
	if err != nil {
		return nil, err
	}
	if err := pg.Migrate(ctx, pool, spec.Schema, spec.Migrations, log); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// openReplica opens the pool of DATABASE_READ_URL (nil when unset); it
// connects lazily, so a replica that is down does not stop the start.
func openReplica(ctx context.Context, cfg Config, spec Spec, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	db := cfg.(interface{ CommonSettings() *config.Common }).CommonSettings()
	if db.DatabaseReadURL == "" {
		return nil, nil
	}
	pool, err := pg.Open(ctx, db.DatabaseReadURL, spec.Schema, pg.Options{MaxConns: db.DBMaxConns, Tracer: tracer, Params: spec.PoolParams})
	if err != nil {
		return nil, fmt.Errorf("read replica: %w", err)
	}
	return pool, nil
}

// newAPI builds the API server and the identity codec.
func (p *Process) newAPI(cfg *config.API, spec Spec) error {
	codec, err := identity.NewCodec(cfg.IdentitySecret)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	srv := web.New(cfg.Web, p.Log, spec.Name, spec.WebOptions...)
	for name, check := range p.checks {
		srv.AddCheck(name, web.Check(check))
	}
	srv.App.Use(p.Metrics.Middleware())
	if p.Reads != nil && p.Reads.Replica() {
		srv.App.Use(markReplicaReads)
	}
	p.checks = map[string]metrics.Check{"api": srv.Ready}
	p.API, p.Codec, p.adminAddr = srv, codec, cfg.Web.AdminAddr
	return nil
}

// markReplicaReads tells the gateway which answers read from the replica.
func markReplicaReads(c *fiber.Ctx) error {
	ctx, read := pg.MarkReplicaReads(c.UserContext())
	c.SetUserContext(ctx)
	err := c.Next()
	if read.Load() {
		c.Set(web.HeaderReadReplica, "replica")
	}
	return err
}

// Go runs f beside the servers; the context it gets ends on a signal or when
// anything else of the process fails, and the process stops when f fails.
func (p *Process) Go(f func(context.Context) error) {
	p.group.Go(func() error { return f(p.ctx) })
}

// Defer has f run at shutdown, after everything Go started has returned, in
// reverse order of the calls (a client closed before the pool it uses).
func (p *Process) Defer(f func()) { p.closers = append(p.closers, f) }

// AddClient registers a client of another system (Temporal, say): the
// process is ready while check passes, and closes it at shutdown (Defer).
func (p *Process) AddClient(name string, check metrics.Check, close func()) {
	p.AddCheck(name, check)
	p.Defer(close)
}

// AddCheck adds a readiness check: the admin port's /readyz fails while it
// fails (and for an API the API port's /readyz too, which the admin port
// asks).
func (p *Process) AddCheck(name string, check metrics.Check) {
	if p.API != nil {
		p.API.AddCheck(name, web.Check(check))
		return
	}
	p.checks[name] = check
}

// Worker is background work that says when it is ready: a Temporal worker
// (temporalx.Worker).
type Worker interface {
	Run(context.Context) error
	Ready() error
	Collector() prometheus.Collector
}

// AddWorker runs w with the process, checks its readiness under name (the
// worker may still wait out a back-off while its server already answers) and
// exports its collector.
func (p *Process) AddWorker(name string, w Worker) {
	p.Metrics.Registry.MustRegister(w.Collector())
	p.AddCheck(name, func(context.Context) error { return w.Ready() })
	p.Go(w.Run)
}

// serve starts the API server, the admin port and pprof (a worker's; an
// API's server serves its own).
func (p *Process) serve() {
	if p.API != nil {
		p.API.Fallback()
		p.Go(p.API.Run)
	}
	checks := metrics.WithReadiness(p.checks)
	p.Go(func(ctx context.Context) error {
		return metrics.ServeAdmin(ctx, p.adminAddr, p.Metrics.Registry, p.Log, checks)
	})
	p.Go(func(ctx context.Context) error { return web.ServePprof(ctx, p.pprofAddr, p.Log) })
}

func (p *Process) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}
