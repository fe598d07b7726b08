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
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobpages"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/payapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
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

	// Stripe Checkout for paid plans, with its webhook; without them paid
	// plans are invoiced (jobs-admin mark-paid). STRIPE_API_BASE points at
	// stripe-mock in tests; empty is Stripe.
	StripeSecretKey     string `env:"STRIPE_SECRET_KEY"`
	StripeWebhookSecret string `env:"STRIPE_WEBHOOK_SECRET"`
	StripeAPIBase       string `env:"STRIPE_API_BASE"`
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
	if (c.StripeSecretKey == "") != (c.StripeWebhookSecret == "") {
		errs = append(errs, errors.New("STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET go together: set both or neither"))
	}
	if c.StripeAPIBase != "" && c.StripeSecretKey == "" {
		errs = append(errs, errors.New("STRIPE_API_BASE needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET"))
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
	// payments is the provider of paid plans (the pages start payments with it).
	var payments payment.Provider = invoicepay.Provider{}
	var stripeProvider *stripepay.Provider
	if cfg.StripeSecretKey != "" {
		if stripeProvider, err = stripepay.New(stripepay.Config{SecretKey: cfg.StripeSecretKey,
			WebhookSecret: cfg.StripeWebhookSecret, APIBase: cfg.StripeAPIBase}); err != nil {
			return err
		}
		payments = stripeProvider
	}
	log.Info("payments", "provider", payments.Name())

	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	srv := web.New(cfg.Web, log, schema)
	srv.AddCheck("postgres", pg.Check(pool))
	srv.App.Use(m.Middleware())
	jobapp.Routes(srv.App, jobapp.Config{Log: log, Bus: bus, Codec: codec,
		PaginationEnabled: cfg.PaginationEnabled, StreamTimeout: cfg.StreamTimeout, Registry: m.Registry})
	if stripeProvider != nil {
		payapp.Routes(srv.App, payapp.Config{Log: log, Bus: bus, Codec: codec, Stripe: stripeProvider})
	}
	jobpages.Routes(srv.App, jobpages.Config{Log: log, Bus: bus, Payments: payments, Secret: []byte(cfg.IdentitySecret)})
	srv.Fallback()

	go func() {
		if err := metrics.ServeAdmin(ctx, cfg.Web.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{"api": srv.Ready})); err != nil {
			log.Error("admin server", "error", err)
		}
	}()
	return srv.Run(ctx)
}
