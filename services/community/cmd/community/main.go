// Command community serves events, the events feed, feedback and the
// newsletter routes. The double opt-in itself runs in community-worker.
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
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/communityapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const schema = "community"

type appConfig struct {
	config.Common
	Web            web.Config
	PublicBaseURL  string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	TokenSecret    string        `env:"NEWSLETTER_TOKEN_SECRET"`
	ConsentVersion string        `env:"NEWSLETTER_CONSENT_VERSION" envDefault:"2026-01"`
	ResendInterval time.Duration `env:"NEWSLETTER_RESEND_INTERVAL" envDefault:"10m"`
}

func (c appConfig) Validate() error {
	errs := []error{c.Common.Validate(), c.Web.Validate()}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("PUBLIC_BASE_URL must be an absolute http(s) URL"))
	}
	if len(c.TokenSecret) < newsletterbus.MinSecretLen {
		errs = append(errs, errors.New("NEWSLETTER_TOKEN_SECRET must be at least 32 characters"))
	}
	if c.ConsentVersion == "" {
		errs = append(errs, errors.New("NEWSLETTER_CONSENT_VERSION is empty"))
	}
	if c.ResendInterval <= 0 {
		errs = append(errs, errors.New("NEWSLETTER_RESEND_INTERVAL must be positive"))
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
	signer, err := newsletterbus.NewSigner(cfg.TokenSecret)
	if err != nil {
		return fmt.Errorf("newsletter tokens: %w", err)
	}

	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	srv := web.New(cfg.Web, log, schema)
	srv.AddCheck("postgres", pg.Check(pool))
	srv.App.Use(m.Middleware())
	communityapp.Routes(srv.App, communityapp.Config{
		Pool: pool, Codec: codec, PublicBaseURL: cfg.PublicBaseURL, Signer: signer,
		ConsentVersion: cfg.ConsentVersion, ResendInterval: cfg.ResendInterval,
	})
	srv.Fallback()

	go func() {
		if err := metrics.ServeAdmin(ctx, cfg.Web.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{"api": srv.Ready})); err != nil {
			log.Error("admin server", "error", err)
		}
	}()
	return srv.Run(ctx)
}
