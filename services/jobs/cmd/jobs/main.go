// Command jobs serves GET and POST /v2/jobs, POST /v2/jobs/unpublish, the
// public feed GET /v2/vine/jobs, the job pages, the sitemaps, the
// aggregators' feeds and the embed. Expiry is handed to Temporal by jobs-worker
// through the outbox this service writes with each job.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"time"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/alertapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/hookapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/importapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobpages"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/payapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/privacyapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/statsapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/cityzone"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/stores/importdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus/stores/indexdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobcache"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/privacybus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus/stores/statsdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay/sessiondb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

func main() {
	spec := service.Spec{Name: "jobs", Schema: "jobs", Migrations: migrations.FS, Changes: []string{scopes.Jobs, scopes.JobsBulk},
		PoolParams: jobdb.PoolParams}
	service.Serve(spec, func(ctx context.Context, p *service.Process, cfg *appConfig) error {
		log := p.Log
		dir := dirclient.New(cfg.DirectoryURL, p.Codec, dirclient.Options{Timeout: cfg.DirectoryTimeout, CacheTTL: cfg.DirectoryCacheTTL})
		store := jobcache.New(jobdb.New(p.Pool), jobcache.Config{Changes: p.Changes, Reads: p.Reads, TotalsMemo: cfg.TotalsMemo})
		bus := jobbus.New(store.Stores(), dir, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL, DefaultInvEmail: cfg.DefaultInvEmail})
		// Writes answered while Redis was away owe their announcements:
		// bumped within a second of its return.
		p.Metrics.Registry.MustRegister(store.Collectors()...)
		p.Go(func(ctx context.Context) error { store.RunSettle(ctx, time.Second); return nil })
		// payments is the provider of paid plans (the pages start payments with it).
		var payments payment.Provider = invoicepay.Provider{}
		var stripeProvider *stripepay.Provider
		if cfg.StripeSecretKey != "" {
			var err error
			if stripeProvider, err = stripepay.New(stripepay.Config{SecretKey: cfg.StripeSecretKey,
				WebhookSecret: cfg.StripeWebhookSecret, APIBase: cfg.StripeAPIBase, Sessions: sessiondb.New(p.Pool)}); err != nil {
				return err
			}
			payments = stripeProvider
		}
		log.Info("payments", "provider", payments.Name())

		app := p.API.App
		hookAllow, _ := outbound.ParseAllow(cfg.WebhooksAllow) // checked by Validate
		counter, err := statsCounter(ctx, p, cfg, bus, dir)
		if err != nil {
			return err
		}
		statsapp.Routes(app, counter)
		jobapp.Routes(app, jobapp.Config{Log: log, Bus: bus, Codec: p.Codec, Stats: counter,
			PaginationEnabled: cfg.PaginationEnabled, StreamTimeout: cfg.StreamTimeout, Registry: p.Metrics.Registry, Totals: store,
			Announcements: indexdb.New(p.Pool), AggregatorPlans: cfg.AggregatorPlans})
		// Mounted without Stripe too, where it answers 503 (not configured).
		payapp.Routes(app, payapp.Config{Log: log, Bus: bus, Codec: p.Codec, Stripe: stripeProvider})
		hookapp.Routes(app, hookapp.Config{Bus: hookbus.New(hookdb.New(p.Pool), hookbus.Config{AllowHTTP: cfg.WebhooksAllowHTTP, Allow: hookAllow}), Codec: p.Codec})
		// Import sources follow the webhooks' outbound rules (the same
		// allowlist and plain-http switch); jobs-worker polls them.
		importapp.Routes(app, importapp.Config{Codec: p.Codec,
			Bus: importbus.New(importdb.New(p.Pool), nil, dir, importbus.Config{AllowHTTP: cfg.WebhooksAllowHTTP, Allow: hookAllow})})
		alertapp.Routes(app, alertapp.Config{Codec: p.Codec, Jobs: bus, Log: log, Bus: &alertbus.Business{Store: alertdb.New(p.Pool), Zones: cityzone.Finder{Dir: dir},
			Signer: alertbus.NewSigner([]byte(cfg.IdentitySecret)),
			Limits: alertbus.ConfirmLimits{Every: cfg.AlertConfirmEvery, PerDay: cfg.AlertConfirmPerDay}}})
		// The erasure page of every mail's link; community hears of it
		// through the worker's privacy outbox relay.
		sealer, err := privacy.NewSealer([]byte(cfg.IdentitySecret))
		if err != nil {
			return err
		}
		privacyapp.Routes(app, privacyapp.Config{Codec: p.Codec, Bus: &privacybus.Business{Store: alertdb.New(p.Pool), Sealer: sealer}})
		jobpages.Routes(app, jobpages.Config{Log: log, Bus: bus, Payments: payments, Secret: []byte(cfg.IdentitySecret),
			Announcements: indexdb.New(p.Pool), AggregatorPlans: cfg.AggregatorPlans, Stats: counter})
		reachapp.Routes(app, reachapp.Config{Log: log, Bus: bus, Codec: p.Codec, Spaces: dir,
			AggregatorPlans: cfg.AggregatorPlans, StreamTimeout: cfg.StreamTimeout, Stats: counter})
		// Batches of more than 100 jobs, kept as operations: every replica
		// runs them, a chunk of rows at a time (SKIP LOCKED).
		p.Go(func(ctx context.Context) error {
			tick := time.NewTicker(cfg.BatchRunInterval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				case <-bus.BatchKicks(): // one this replica kept: at once
				}
				if _, err := bus.RunBatchOps(ctx); err != nil && ctx.Err() == nil {
					log.Error("batch operations", "error", err)
				}
			}
		})
		return nil
	})
}

// statsCounter builds the job statistics (statsbus): the recorder writing
// batches beside the server (on STATS_DATABASE_URL when set, else the
// service's pool), its purge, and the counter the pages and lists use.
func statsCounter(ctx context.Context, p *service.Process, cfg *appConfig, bus *jobbus.Business, dir *dirclient.Client) (*statsapp.Counter, error) {
	pool := p.Pool
	if cfg.StatsDatabaseURL != "" {
		var err error
		if pool, err = pg.Open(ctx, cfg.StatsDatabaseURL, "jobs", pg.Options{MaxConns: 4}); err != nil {
			return nil, err
		}
		p.Defer(pool.Close)
	}
	store := statsdb.New(pool)
	rec := statsbus.NewRecorder(store, statsbus.RecorderConfig{Every: cfg.StatsFlushEvery, BatchSize: cfg.StatsBatchSize,
		MaxPending: cfg.StatsBufferMax, RawRetention: cfg.StatsRawRetention, Registry: p.Metrics.Registry, Log: p.Log})
	p.Go(rec.Run)
	visitors, err := statsbus.NewVisitors([]byte(cfg.IdentitySecret))
	if err != nil {
		return nil, err
	}
	refs, err := statsbus.NewRefs([]byte(cfg.IdentitySecret))
	if err != nil {
		return nil, err
	}
	return statsapp.NewCounter(statsapp.Config{Log: p.Log, Codec: p.Codec, Jobs: bus, Recorder: rec, Visitors: visitors, Refs: refs,
		Off: !cfg.StatsCounting, Stats: &statsbus.Business{Store: store, Jobs: bus, Spaces: dir}}), nil
}

type appConfig struct {
	config.API

	DirectoryURL      string        `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	DirectoryTimeout  time.Duration `env:"DIRECTORY_TIMEOUT" envDefault:"2s"`
	DirectoryCacheTTL time.Duration `env:"DIRECTORY_CACHE_TTL" envDefault:"30s"`
	PublicBaseURL     string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	PaginationEnabled bool          `env:"JOBS_PAGINATION_ENABLED" envDefault:"false"`
	DefaultInvEmail   string        `env:"DEFAULT_INV_EMAIL" envDefault:"jobs@coworkjobs.example"`
	StreamTimeout     time.Duration `env:"JOBS_STREAM_TIMEOUT" envDefault:"60s"`
	// BatchRunInterval is how often the batch operations waiting are looked for.
	BatchRunInterval time.Duration `env:"JOBS_BATCH_RUN_INTERVAL" envDefault:"500ms"`
	// TotalsMemo keeps listings' exact totals under the change versions
	// (docs/search.md, "Totals"; needs REDIS_URL); off, every page counts.
	TotalsMemo bool `env:"JOBS_TOTALS_MEMO" envDefault:"true"`
	// WebhooksAllowHTTP lets webhook endpoints use plain http (make run's
	// local receiver); off, https only.
	WebhooksAllowHTTP bool `env:"WEBHOOKS_ALLOW_HTTP" envDefault:"false"`
	// WebhooksAllow is jobs-worker's list of the special addresses
	// deliveries may reach: registration refuses the others' literals.
	WebhooksAllow string `env:"WEBHOOKS_ALLOW_ADDRESSES"`
	// AggregatorPlans limits GET /feeds/jobs.xml to jobs of these plans
	// (comma-separated plan ids, e.g. the paid ones); empty: every plan.
	AggregatorPlans []int `env:"JOBS_AGGREGATOR_PLANS" envSeparator:","`
	// The confirmation mails one address may be sent (alertbus.ConfirmLimits).
	AlertConfirmEvery  time.Duration `env:"ALERT_CONFIRM_EVERY" envDefault:"10m"`
	AlertConfirmPerDay int           `env:"ALERT_CONFIRMS_PER_DAY" envDefault:"5"`

	// Stripe Checkout for paid plans, with its webhook; without them paid
	// plans are invoiced (jobs-admin mark-paid). STRIPE_API_BASE points at
	// stripe-mock in tests; empty is Stripe.
	StripeSecretKey     string `env:"STRIPE_SECRET_KEY"`
	StripeWebhookSecret string `env:"STRIPE_WEBHOOK_SECRET"`
	StripeAPIBase       string `env:"STRIPE_API_BASE"`

	// Job statistics (statsbus, docs/privacy.md): events wait in a buffer of
	// at most STATS_BUFFER_MAX events and are written every
	// STATS_FLUSH_EVERY or STATS_BATCH_SIZE events; raw events are kept
	// STATS_RAW_RETENTION, the daily roll-ups for ever. STATS_DATABASE_URL
	// writes them elsewhere than DATABASE_URL (a database with the jobs
	// schema; empty: the service's own).
	StatsBufferMax    int           `env:"STATS_BUFFER_MAX" envDefault:"100000"`
	StatsFlushEvery   time.Duration `env:"STATS_FLUSH_EVERY" envDefault:"1s"`
	StatsBatchSize    int           `env:"STATS_BATCH_SIZE" envDefault:"500"`
	StatsRawRetention time.Duration `env:"STATS_RAW_RETENTION" envDefault:"720h"`
	StatsDatabaseURL  string        `env:"STATS_DATABASE_URL"`
	// STATS_COUNTING=false counts nothing (pages, lists and the redirect
	// answer as before; the reads answer what was counted): the benchmark's
	// baseline of a page's counting cost, and a way out should counting
	// ever hurt.
	StatsCounting bool `env:"STATS_COUNTING" envDefault:"true"`
}

func (c appConfig) Validate() error {
	errs := []error{c.API.Validate(), config.HTTPURL("DIRECTORY_URL", c.DirectoryURL), config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL)}
	if a, err := mail.ParseAddress(c.DefaultInvEmail); err != nil || a.Address != c.DefaultInvEmail {
		errs = append(errs, errors.New("DEFAULT_INV_EMAIL must be a bare e-mail address"))
	}
	if c.BatchRunInterval <= 0 {
		errs = append(errs, errors.New("JOBS_BATCH_RUN_INTERVAL must be positive"))
	}
	if (c.StripeSecretKey == "") != (c.StripeWebhookSecret == "") {
		errs = append(errs, errors.New("STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET go together: set both or neither"))
	}
	if c.StripeAPIBase != "" && c.StripeSecretKey == "" {
		errs = append(errs, errors.New("STRIPE_API_BASE needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET"))
	}
	for _, id := range c.AggregatorPlans {
		if id <= 0 {
			errs = append(errs, errors.New("JOBS_AGGREGATOR_PLANS must list plan ids (positive integers)"))
			break
		}
	}
	if _, err := outbound.ParseAllow(c.WebhooksAllow); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOKS_ALLOW_ADDRESSES: %w", err))
	}
	if c.AlertConfirmEvery < time.Second || c.AlertConfirmEvery > 24*time.Hour || c.AlertConfirmPerDay < 1 {
		errs = append(errs, errors.New("ALERT_CONFIRM_EVERY must be between 1s and 24h and ALERT_CONFIRMS_PER_DAY positive"))
	}
	if c.StatsBufferMax < 1 || c.StatsBatchSize < 1 || c.StatsFlushEvery <= 0 || c.StatsFlushEvery > time.Minute || c.StatsRawRetention < 48*time.Hour {
		errs = append(errs, errors.New("STATS_BUFFER_MAX and STATS_BATCH_SIZE must be positive, STATS_FLUSH_EVERY between 0 and 1m, STATS_RAW_RETENTION at least 48h"))
	}
	if c.DirectoryTimeout <= 0 || c.StreamTimeout <= 0 {
		errs = append(errs, errors.New("DIRECTORY_TIMEOUT and JOBS_STREAM_TIMEOUT must be positive"))
	}
	return errors.Join(errs...)
}
