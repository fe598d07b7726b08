// Command jobs-worker runs the job-expiry Temporal worker (with the poster's
// mails), keeps the sweep schedule in place, and relays the outbox to Temporal. It scales
// separately from the jobs API.
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
	tlog "go.temporal.io/sdk/log"
	"golang.org/x/sync/errgroup"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobexpiry"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

const schema = "jobs"

type workerConfig struct {
	ServiceName       string        `env:"SERVICE_NAME"`
	LogLevel          string        `env:"LOG_LEVEL" envDefault:"info"`
	DatabaseURL       string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	DBMaxConns        int32         `env:"DB_MAX_CONNS" envDefault:"5"`
	TemporalAddress   string        `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string        `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	SweepInterval     time.Duration `env:"JOBS_SWEEP_INTERVAL" envDefault:"5m"`
	RelayInterval     time.Duration `env:"JOBS_RELAY_INTERVAL" envDefault:"1s"`
	// The poster's mails: the links in them, the server, and when before
	// the expiry the reminder goes (0 turns reminders off).
	PublicBaseURL string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	SMTPURL       string        `env:"SMTP_URL" envDefault:"smtp://127.0.0.1:1025"`
	MailFrom      string        `env:"JOBS_MAIL_FROM" envDefault:"coworkjobs <jobs@coworkjobs.example>"`
	RemindBefore  time.Duration `env:"JOBS_REMIND_BEFORE" envDefault:"72h"`
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
	if c.SweepInterval < time.Second || c.RelayInterval <= 0 {
		errs = append(errs, errors.New("JOBS_SWEEP_INTERVAL must be at least 1s and JOBS_RELAY_INTERVAL positive"))
	}
	if c.DBMaxConns < 1 {
		errs = append(errs, errors.New("DB_MAX_CONNS must be positive"))
	}
	if c.RemindBefore < 0 {
		errs = append(errs, errors.New("JOBS_REMIND_BEFORE must not be negative"))
	}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("PUBLIC_BASE_URL must be an absolute http(s) URL"))
	}
	return errors.Join(errs...)
}

func main() {
	log := logx.New("jobs-worker", os.Getenv("LOG_LEVEL"))
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

	shutdownTracing, err := telemetry.Setup(ctx, "jobs-worker", "", log)
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
	store := jobdb.New(pool)
	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	interceptors, err := temporalx.Interceptors(m.Registry)
	if err != nil {
		return fmt.Errorf("temporal interceptors: %w", err)
	}

	// The client connects lazily, so the worker starts (and the relay keeps
	// the outbox) while Temporal is still coming up.
	tc, err := client.NewLazyClient(client.Options{
		HostPort:  cfg.TemporalAddress,
		Namespace: cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(log),
		// Tracing (trace context into workflows and activities) and outcome
		// counters; both apply to the worker built on this client too.
		Interceptors: interceptors,
	})
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	defer tc.Close()

	sender, err := mailer.New(cfg.SMTPURL, cfg.MailFrom)
	if err != nil {
		return err
	}
	mails := &jobmail.Activities{Jobs: jobbus.New(store, nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL}), Mail: sender}
	w := jobexpiry.NewWorker(tc, &jobexpiry.Activities{Store: store, Metrics: jobexpiry.NewMetrics(m.Registry), Mail: mails}, log)
	m.Registry.MustRegister(w.Collector())

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.Run(ctx) })
	g.Go(func() error {
		return metrics.ServeAdmin(ctx, cfg.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{
			"postgres": pg.Check(pool), "temporal": temporalx.Check(tc),
			// Temporal may answer while the worker still waits out a back-off.
			"worker": func(context.Context) error { return w.Ready() }}))
	})
	g.Go(func() error { return web.ServePprof(ctx, cfg.PprofAddr, log) })
	g.Go(func() error {
		relay := &jobexpiry.Relay{Outbox: store, Starter: jobexpiry.TemporalStarter{Client: tc, RemindBefore: cfg.RemindBefore}, Log: log, Interval: cfg.RelayInterval}
		return relay.Run(ctx)
	})
	g.Go(func() error {
		// Keep trying until the schedule exists: Temporal may start after us.
		for {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := jobexpiry.EnsureSweepSchedule(sctx, tc, cfg.SweepInterval)
			cancel()
			if err == nil {
				log.Info("sweep schedule in place", "every", cfg.SweepInterval.String())
				return nil
			}
			log.Warn("sweep schedule", "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(5 * time.Second):
			}
		}
	})
	log.Info("jobs worker started", "temporal", cfg.TemporalAddress, "namespace", cfg.TemporalNamespace)
	return g.Wait()
}
