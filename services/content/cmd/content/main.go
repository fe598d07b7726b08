// Command content serves the blog: GET /v2/blog and the public feed
// GET /v2/vine/blog.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/content/internal/app/blogapp"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

const schema = "content"

type appConfig struct {
	config.Common
	Web web.Config
	// PublicBaseURL is the public origin the feed's links start with.
	PublicBaseURL string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	// FeedMaxAge is the feed's Cache-Control max-age in seconds.
	FeedMaxAge int `env:"FEED_MAX_AGE_SECONDS" envDefault:"60"`
}

func (c appConfig) Validate() error {
	errs := []error{c.Common.Validate(), c.Web.Validate()}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PUBLIC_BASE_URL %q must be an absolute http(s) URL", c.PublicBaseURL))
	}
	if c.FeedMaxAge < 0 || c.FeedMaxAge > 86400 {
		errs = append(errs, errors.New("FEED_MAX_AGE_SECONDS must be between 0 and 86400"))
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

	bus := postbus.New(postdb.New(pool), nil)

	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	srv := web.New(cfg.Web, log, schema)
	srv.AddCheck("postgres", pg.Check(pool))
	srv.App.Use(m.Middleware())
	v2 := srv.App.Group("/v2", codec.Middleware())
	blogapp.Routes(v2, bus, blogapp.Config{PublicBaseURL: cfg.PublicBaseURL, FeedMaxAge: cfg.FeedMaxAge})
	srv.Fallback()

	go func() {
		if err := metrics.ServeAdmin(ctx, cfg.Web.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{"api": srv.Ready})); err != nil {
			log.Error("admin server", "error", err)
		}
	}()
	return srv.Run(ctx)
}
