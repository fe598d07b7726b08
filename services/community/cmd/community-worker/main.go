// Command community-worker runs the newsletter double opt-in: the Temporal
// worker (workflow + activities) and the outbox relay that starts and signals
// the workflows for what the API wrote to the database.
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

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/workflows/optin"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const schema = "community"

type workerConfig struct {
	LogLevel          string        `env:"LOG_LEVEL" envDefault:"info"`
	DatabaseURL       string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	DBMaxConns        int32         `env:"DB_MAX_CONNS" envDefault:"5"`
	TemporalAddress   string        `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string        `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	PublicBaseURL     string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	TokenSecret       string        `env:"NEWSLETTER_TOKEN_SECRET"`
	ConsentVersion    string        `env:"NEWSLETTER_CONSENT_VERSION" envDefault:"2026-01"`
	ResendInterval    time.Duration `env:"NEWSLETTER_RESEND_INTERVAL" envDefault:"10m"`
	ConfirmWindow     time.Duration `env:"NEWSLETTER_CONFIRM_WINDOW" envDefault:"48h"`
	SMTPURL           string        `env:"SMTP_URL" envDefault:"smtp://127.0.0.1:1025"`
	MailFrom          string        `env:"MAIL_FROM" envDefault:"coworkjobs <newsletter@coworkjobs.example>"`
	OutboxInterval    time.Duration `env:"OUTBOX_POLL_INTERVAL" envDefault:"1s"`
	// AdminAddr serves /metrics and the probes (/livez, /readyz); "off" disables.
	AdminAddr string `env:"ADMIN_ADDR" envDefault:":9090"`
	// PprofAddr serves pprof (web.ServePprof); empty is off.
	PprofAddr string `env:"PPROF_ADDR"`
}

func (c workerConfig) Validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is empty"))
	}
	if c.TemporalAddress == "" || c.TemporalNamespace == "" {
		errs = append(errs, errors.New("TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE must be set"))
	}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("PUBLIC_BASE_URL must be an absolute http(s) URL"))
	}
	if len(c.TokenSecret) < newsletterbus.MinSecretLen {
		errs = append(errs, errors.New("NEWSLETTER_TOKEN_SECRET must be at least 32 characters"))
	}
	if c.ResendInterval <= 0 || c.ConfirmWindow <= 0 || c.OutboxInterval <= 0 {
		errs = append(errs, errors.New("NEWSLETTER_RESEND_INTERVAL, NEWSLETTER_CONFIRM_WINDOW and OUTBOX_POLL_INTERVAL must be positive"))
	}
	if c.DBMaxConns < 1 {
		errs = append(errs, errors.New("DB_MAX_CONNS must be positive"))
	}
	return errors.Join(errs...)
}

func main() {
	log := logx.New("community-worker", os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), log); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	var cfg workerConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	shutdownTracing, err := telemetry.Setup(ctx, "community-worker", "", log)
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
	signer, err := newsletterbus.NewSigner(cfg.TokenSecret)
	if err != nil {
		return err
	}
	sender, err := mailer.New(cfg.SMTPURL, cfg.MailFrom)
	if err != nil {
		return err
	}
	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	interceptors, err := temporalx.Interceptors(m.Registry)
	if err != nil {
		return fmt.Errorf("temporal interceptors: %w", err)
	}
	// The client connects lazily and the worker retries its start, so this
	// process starts (and the relay keeps the outbox) while Temporal is still
	// coming up: make run starts Temporal beside the services.
	tc, err := client.NewLazyClient(client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: log,
		// Tracing (trace context into workflows and activities) and outcome
		// counters; both apply to the worker built on this client too.
		Interceptors: interceptors,
	})
	if err != nil {
		return fmt.Errorf("temporal client for %s: %w", cfg.TemporalAddress, err)
	}
	defer tc.Close()

	store := newsletterdb.New(pool)
	nl := newsletterbus.New(store, signer, newsletterbus.Config{ConsentVersion: cfg.ConsentVersion, ResendInterval: cfg.ResendInterval})
	acts := &optin.Activities{Newsletter: nl, Mail: sender, PublicBaseURL: cfg.PublicBaseURL,
		Metrics: optin.NewMetrics(m.Registry)}
	w := optin.NewWorker(tc, acts, log)
	m.Registry.MustRegister(w.Collector())
	relay := &optin.Relay{Outbox: store, Temporal: tc, ConfirmWindow: cfg.ConfirmWindow, Log: log}

	log.Info("community worker started", "temporal", cfg.TemporalAddress, "namespace", cfg.TemporalNamespace,
		"task_queue", optin.TaskQueue, "smtp", redact(cfg.SMTPURL))
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.Run(ctx) })
	g.Go(func() error { return relay.Run(ctx, cfg.OutboxInterval) })
	g.Go(func() error {
		return metrics.ServeAdmin(ctx, cfg.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{
			"postgres": pg.Check(pool), "temporal": temporalx.Check(tc),
			// Temporal may answer while the worker still waits out a back-off.
			"worker": func(context.Context) error { return w.Ready() }}))
	})
	g.Go(func() error { return web.ServePprof(ctx, cfg.PprofAddr, log) })
	return g.Wait()
}

// redact hides SMTP credentials in logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "invalid"
	}
	return u.Redacted()
}
