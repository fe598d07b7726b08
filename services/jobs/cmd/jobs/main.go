// Command jobs serves GET and POST /v2/jobs, POST /v2/jobs/unpublish and the
// public feed GET /v2/vine/jobs. Expiry is handed to Temporal by jobs-worker
// through the outbox this service writes with each job.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

const schema = "jobs"

type appConfig struct {
	config.Common
	Web web.Config

	DirectoryURL      string        `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	DirectoryTimeout  time.Duration `env:"DIRECTORY_TIMEOUT" envDefault:"2s"`
	DirectoryCacheTTL time.Duration `env:"DIRECTORY_CACHE_TTL" envDefault:"30s"`
	PublicBaseURL     string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	PaginationEnabled bool          `env:"JOBS_PAGINATION_ENABLED" envDefault:"false"`
	DefaultInvEmail   string        `env:"DEFAULT_INV_EMAIL" envDefault:"jobs@coworkjobs.example"`
	StreamTimeout     time.Duration `env:"JOBS_STREAM_TIMEOUT" envDefault:"60s"`
}

func (c appConfig) Validate() error {
	var errs []error
	errs = append(errs, c.Common.Validate(), c.Web.Validate())
	for name, v := range map[string]string{"DIRECTORY_URL": c.DirectoryURL, "PUBLIC_BASE_URL": c.PublicBaseURL} {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s must be an absolute http(s) URL", name))
		}
	}
	if a, err := mail.ParseAddress(c.DefaultInvEmail); err != nil || a.Address != c.DefaultInvEmail {
		errs = append(errs, errors.New("DEFAULT_INV_EMAIL must be a bare e-mail address"))
	}
	if c.DirectoryTimeout <= 0 || c.StreamTimeout <= 0 {
		errs = append(errs, errors.New("DIRECTORY_TIMEOUT and JOBS_STREAM_TIMEOUT must be positive"))
	}
	return errors.Join(errs...)
}

func main() {
	log := logx.New(schema, os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), log); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	var cfg appConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	shutdownTracing, err := telemetry.Setup(ctx, schema, "", log)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: cfg.DBMaxConns, Tracer: telemetry.PgxTracer()})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, schema, migrations.FS, log); err != nil {
		return err
	}
	if cfg.MigrateOnly {
		log.Info("migrations applied; MIGRATE_ONLY is set, exiting")
		return nil
	}
	codec, err := identity.NewCodec(cfg.IdentitySecret)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	dir := dirclient.New(cfg.DirectoryURL, codec, dirclient.Options{Timeout: cfg.DirectoryTimeout, CacheTTL: cfg.DirectoryCacheTTL})
	bus := jobbus.New(jobdb.New(pool), dir, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL, DefaultInvEmail: cfg.DefaultInvEmail})

	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	srv := web.New(cfg.Web, log, schema)
	srv.AddCheck("postgres", pg.Check(pool))
	srv.App.Use(m.Middleware())
	jobapp.Routes(srv.App, jobapp.Config{Log: log, Bus: bus, Codec: codec,
		PaginationEnabled: cfg.PaginationEnabled, StreamTimeout: cfg.StreamTimeout, Registry: m.Registry})
	srv.Fallback()

	go func() {
		if err := metrics.ServeAdmin(ctx, cfg.Web.AdminAddr, m.Registry, log); err != nil {
			log.Error("admin server", "error", err)
		}
	}()
	return srv.Run(ctx)
}
