// Command jobs-worker runs the job-expiry Temporal worker (with the poster's
// mails), keeps the sweep schedule in place, and relays the outbox to Temporal. It scales
// separately from the jobs API.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/feeds"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/stores/importdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus/stores/indexdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobcache"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/privacybus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus/stores/statsdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/commclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/alertmail"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/importsync"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/indexing"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobexpiry"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/webhook"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

func main() {
	// Its relays (webhook dispatch and outbox, webhook mails, alert matching
	// and mails, expiry, notices) each hold a connection through a round,
	// beside the activities: a worker's 5 would be saturated, so the
	// chart's 10 is its default too.
	defaults := config.WorkerDefaults()
	defaults["DB_MAX_CONNS"] = "10"
	spec := service.Spec{Name: "jobs-worker", Schema: "jobs", Migrations: migrations.FS, Defaults: defaults,
		Changes: []string{scopes.Jobs, scopes.JobsBulk}}
	service.Serve(spec, func(ctx context.Context, p *service.Process, cfg *workerConfig) error {
		log := p.Log
		sender, err := mailer.New(cfg.SMTPURL, cfg.MailFrom)
		if err != nil {
			return err
		}
		m := p.Metrics
		tc, err := temporalx.NewClient(cfg.Temporal, m.Registry, log)
		if err != nil {
			return err
		}
		p.AddClient("temporal", temporalx.Check(tc), tc.Close)

		store := jobdb.New(p.Pool)
		mails := &jobmail.Activities{Jobs: jobbus.New(store.Stores(), nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL}), Mail: sender,
			Stats: statsdb.New(p.Pool)}
		acts := &jobexpiry.Activities{Store: store, Metrics: jobexpiry.NewMetrics(m.Registry), Mail: mails, Changes: p.Changes}
		p.AddWorker("worker", temporalx.NewWorker(tc, jobexpiry.TaskQueue, jobexpiry.Register, acts, log))

		// Webhooks: the deliveries' workflows on a queue of their own, and
		// the fan-out of job events with its outbox relay.
		allow, err := outbound.ParseAllow(cfg.WebhooksAllow)
		if err != nil {
			return err
		}
		hooks := hookdb.New(p.Pool)
		hookActs := &webhook.Activities{Store: hooks, Readers: eventdb.New(p.Pool), Jobs: jobbus.New(store.Stores(), nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL}),
			Client: outbound.New(outbound.Config{Allow: allow, IdlePerHost: webhook.PumpConcurrency}), Mail: sender, Log: log}
		p.AddWorker("webhooks", temporalx.NewWorker(tc, webhook.TaskQueue, webhook.Register, hookActs, log))
		relayMetrics := outbox.NewMetrics(m.Registry)
		// The mails to owners of disabled endpoints, from their outbox.
		p.Go((&outbox.Relay[hookdb.DisabledMail]{Table: hooks.MailOutbox(), Deliver: hookActs.MailDisabled, Log: log,
			Metrics: relayMetrics, Interval: cfg.RelayInterval}).Run)
		p.Go(func(ctx context.Context) error {
			return (&webhook.Relay{Store: hooks, Temporal: tc, Log: log, Metrics: relayMetrics, Interval: cfg.RelayInterval}).Run(ctx)
		})
		// Import sources: their workflows on a queue of their own, the API's
		// wake-ups relayed to them, and every source woken at the start.
		// Their jobs are written as the API writes them (announced to the
		// caches, cities resolved by the directory), fetched under the
		// webhooks' outbound rules.
		codec, err := identity.NewCodec(cfg.AlertSecret)
		if err != nil {
			return err
		}
		dir := dirclient.New(cfg.DirectoryURL, codec, dirclient.Options{Timeout: cfg.DirectoryTimeout, CacheTTL: 30 * time.Second})
		imports := importdb.New(p.Pool)
		importJobs := jobbus.New(jobcache.New(store, jobcache.Config{Changes: p.Changes}).Stores(), dir,
			jobbus.Config{PublicBaseURL: cfg.PublicBaseURL, DefaultInvEmail: cfg.DefaultInvEmail})
		importBus := importbus.New(imports, importJobs, dir, importbus.Config{Allow: allow, Decode: jobapp.DecodeCreate,
			Client: outbound.New(outbound.Config{Allow: allow, Timeout: feeds.FetchTimeout, MaxRead: feeds.MaxFeed})})
		p.AddWorker("imports", temporalx.NewWorker(tc, importsync.TaskQueue, importsync.Register, &importsync.Activities{Imports: importBus}, log))
		p.Go(importsync.Relay(tc, imports.Wakes(), outbox.Relay[int64]{Log: log, Metrics: relayMetrics, Interval: cfg.RelayInterval}).Run)
		p.Go(func(ctx context.Context) error {
			// Keep trying until every source's workflow runs: Temporal may start after us.
			for {
				sctx, cancel := context.WithTimeout(ctx, time.Minute)
				ids, err := imports.Sources(sctx)
				if err == nil {
					err = importsync.EnsureAll(sctx, tc, ids, log)
				}
				cancel()
				if err == nil {
					return nil
				}
				log.Warn("import sources' workflows", "error", err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(5 * time.Second):
				}
			}
		})
		// Search-engine notices: off unless a service-account key is given.
		if cfg.IndexingCredentials != "" {
			key, err := os.ReadFile(cfg.IndexingCredentials)
			if err != nil {
				return fmt.Errorf("INDEXING_CREDENTIALS_FILE: %w", err)
			}
			client, err := indexing.NewClient(key, cfg.IndexingBaseURL, 30*time.Second)
			if err != nil {
				return err
			}
			notices := &indexing.Relay{Store: indexdb.New(p.Pool), Readers: eventdb.New(p.Pool), Send: client.Send, BaseURL: cfg.PublicBaseURL,
				DailyQuota: cfg.IndexingDailyQuota, Interval: cfg.RelayInterval, Metrics: indexing.NewMetrics(m.Registry), Log: log}
			p.Go(notices.Run)
			log.Info("indexing notices on", "api", client.BaseURL, "daily_quota", cfg.IndexingDailyQuota)
		}
		// The erasures the jobs API took, handed to community (retried
		// while it is away); every alert mail carries the erasure link.
		sealer, err := privacy.NewSealer([]byte(cfg.AlertSecret))
		if err != nil {
			return err
		}
		erasures := &privacybus.Business{Store: alertdb.New(p.Pool), Sealer: sealer,
			Community: commclient.New(cfg.CommunityURL, codec, 10*time.Second)}
		p.Go(privacybus.Relay(erasures, alertdb.New(p.Pool).PrivacyOutboxTable(), func(it alertdb.PrivacyItem) string { return it.Token },
			// at most a minute between tries: an erasure goes through soon after community is back
			outbox.Relay[alertdb.PrivacyItem]{Log: log, Metrics: relayMetrics, Interval: cfg.RelayInterval, MaxBackoff: time.Minute}).Run)
		// Job alerts: matching job_events, the outbox relay starting one
		// mail workflow per mail, their worker, and the digest clock.
		alerts := &alertmail.Relay{Store: alertdb.New(p.Pool), Readers: eventdb.New(p.Pool), Signer: alertbus.NewSigner([]byte(cfg.AlertSecret)), Privacy: sealer,
			Starter: alertmail.TemporalStarter{Client: tc},
			Jobs:    jobbus.New(store.Stores(), nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL}), Mail: sender, Log: log,
			Metrics: relayMetrics, Interval: cfg.RelayInterval}
		p.AddWorker("alerts", temporalx.NewWorker(tc, alertmail.TaskQueue, alertmail.Register, &alertmail.Activities{Mails: alerts, Stats: statsdb.New(p.Pool)}, log))
		p.Go(alerts.Run)
		p.Go(func(ctx context.Context) error {
			// Keep trying until the clock runs: Temporal may start after us.
			for {
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := alertmail.EnsureClock(sctx, tc, alertmail.ClockInput{Period: cfg.DigestPeriod})
				cancel()
				if err == nil {
					log.Info("alert digest clock running", "every", cfg.DigestPeriod.String())
					return nil
				}
				log.Warn("alert digest clock", "error", err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(5 * time.Second):
				}
			}
		})
		p.Go(func(ctx context.Context) error {
			relay := &jobexpiry.Relay{Outbox: store, Starter: jobexpiry.TemporalStarter{Client: tc, RemindBefore: cfg.RemindBefore}, Log: log,
				Metrics: relayMetrics, Interval: cfg.RelayInterval}
			return relay.Run(ctx)
		})
		p.Go(func(ctx context.Context) error {
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
		log.Info("jobs worker started", "temporal", cfg.Temporal.TemporalAddress, "namespace", cfg.Temporal.TemporalNamespace)
		return nil
	})
}

type workerConfig struct {
	temporalx.WorkerConfig
	SweepInterval time.Duration `env:"JOBS_SWEEP_INTERVAL" envDefault:"5m"`
	RelayInterval time.Duration `env:"JOBS_RELAY_INTERVAL" envDefault:"1s"`
	// The poster's mails: the links in them, the server, and when before
	// the expiry the reminder goes (0 turns reminders off).
	PublicBaseURL string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	SMTPURL       string        `env:"SMTP_URL" envDefault:"smtp://127.0.0.1:1025"`
	MailFrom      string        `env:"JOBS_MAIL_FROM" envDefault:"coworkjobs <jobs@coworkjobs.example>"`
	RemindBefore  time.Duration `env:"JOBS_REMIND_BEFORE" envDefault:"72h"`
	// WebhooksAllow lists the special addresses (CIDR prefixes, or
	// "loopback") webhook deliveries may reach; empty: only public ones.
	WebhooksAllow string `env:"WEBHOOKS_ALLOW_ADDRESSES"`
	// Google's Indexing API: the service-account JSON key's file (empty:
	// no notices), the API's base URL and the notices a UTC day may send.
	IndexingCredentials string `env:"INDEXING_CREDENTIALS_FILE"`
	IndexingBaseURL     string `env:"INDEXING_API_URL" envDefault:"https://indexing.googleapis.com"`
	IndexingDailyQuota  int    `env:"INDEXING_DAILY_QUOTA" envDefault:"200"`
	// AlertSecret signs the alerts' links as the jobs service checks them.
	AlertSecret string `env:"INTERNAL_IDENTITY_SECRET"`
	// DigestPeriod is the digest clock's tick (the alerts' digests are due
	// at 08:00 local, so quarter hours; shorter only for tests). A running
	// clock keeps the period it was started with (across continue-as-new):
	// terminate it to change it.
	DigestPeriod time.Duration `env:"ALERT_DIGEST_PERIOD" envDefault:"15m"`
	// DirectoryURL resolves the cities of imported jobs (as the jobs API).
	DirectoryURL     string        `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	DirectoryTimeout time.Duration `env:"DIRECTORY_TIMEOUT" envDefault:"2s"`
	// DefaultInvEmail is the invoice address of imported jobs without one (as the jobs API).
	DefaultInvEmail string `env:"DEFAULT_INV_EMAIL" envDefault:"jobs@coworkjobs.example"`
	// CommunityURL is where erasures go on to the newsletter's data.
	CommunityURL string `env:"COMMUNITY_URL" envDefault:"http://127.0.0.1:8084"`
}

func (c workerConfig) Validate() error {
	errs := []error{c.WorkerConfig.Validate()}
	if c.SweepInterval < time.Second || c.RelayInterval <= 0 {
		errs = append(errs, errors.New("JOBS_SWEEP_INTERVAL must be at least 1s and JOBS_RELAY_INTERVAL positive"))
	}
	if c.DigestPeriod < time.Second || c.DigestPeriod > time.Hour {
		errs = append(errs, errors.New("ALERT_DIGEST_PERIOD must be between 1s and 1h"))
	}
	if c.RemindBefore < 0 {
		errs = append(errs, errors.New("JOBS_REMIND_BEFORE must not be negative"))
	}
	errs = append(errs, config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL), config.HTTPURL("INDEXING_API_URL", c.IndexingBaseURL),
		config.HTTPURL("COMMUNITY_URL", c.CommunityURL), config.HTTPURL("DIRECTORY_URL", c.DirectoryURL))
	if c.DirectoryTimeout <= 0 {
		errs = append(errs, errors.New("DIRECTORY_TIMEOUT must be positive"))
	}
	if c.IndexingDailyQuota < 1 {
		errs = append(errs, errors.New("INDEXING_DAILY_QUOTA must be at least 1"))
	}
	if len(c.AlertSecret) < 32 {
		errs = append(errs, errors.New("INTERNAL_IDENTITY_SECRET must be at least 32 characters (it signs the job alerts' links)"))
	}
	if _, err := outbound.ParseAllow(c.WebhooksAllow); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOKS_ALLOW_ADDRESSES: %w", err))
	}
	return errors.Join(errs...)
}
