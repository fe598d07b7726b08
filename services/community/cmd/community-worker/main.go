// Command community-worker runs the newsletter double opt-in: the Temporal
// worker (workflow + activities) and the outbox relay that starts and signals
// the workflows for what the API wrote to the database.
package main

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/workflows/optin"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

func main() {
	spec := service.Spec{Name: "community-worker", Schema: "community", Migrations: migrations.FS, Defaults: config.WorkerDefaults()}
	service.Serve(spec, func(ctx context.Context, p *service.Process, cfg *workerConfig) error {
		log := p.Log
		signer, err := newsletterbus.NewSigner(cfg.TokenSecret)
		if err != nil {
			return err
		}
		tc, err := temporalx.NewClient(cfg.Temporal, p.Metrics.Registry, log)
		if err != nil {
			return err
		}
		p.AddClient("temporal", temporalx.Check(tc), tc.Close)
		sender, err := mailer.New(cfg.SMTPURL, cfg.MailFrom)
		if err != nil {
			return err
		}

		m := p.Metrics
		store := newsletterdb.New(p.Pool)
		nl := newsletterbus.New(store, signer, newsletterbus.Config{ConsentVersion: cfg.ConsentVersion, ResendInterval: cfg.ResendInterval})
		sealer, err := privacy.NewSealer([]byte(cfg.IdentitySecret))
		if err != nil {
			return err
		}
		acts := &optin.Activities{Newsletter: nl, Mail: sender, PublicBaseURL: cfg.PublicBaseURL, Privacy: sealer,
			Metrics: optin.NewMetrics(m.Registry)}
		p.AddWorker("worker", temporalx.NewWorker(tc, optin.TaskQueue, optin.Register, acts, log))
		relay := &optin.Relay{Outbox: store, Temporal: tc, ConfirmWindow: cfg.ConfirmWindow, Log: log,
			Metrics: outbox.NewMetrics(m.Registry), Interval: cfg.OutboxInterval}
		p.Go(relay.Run)

		log.Info("community worker started", "temporal", cfg.Temporal.TemporalAddress, "namespace", cfg.Temporal.TemporalNamespace,
			"task_queue", optin.TaskQueue, "smtp", redact(cfg.SMTPURL))
		return nil
	})
}

type workerConfig struct {
	temporalx.WorkerConfig
	PublicBaseURL  string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	TokenSecret    string        `env:"NEWSLETTER_TOKEN_SECRET"`
	ConsentVersion string        `env:"NEWSLETTER_CONSENT_VERSION" envDefault:"2026-01"`
	ResendInterval time.Duration `env:"NEWSLETTER_RESEND_INTERVAL" envDefault:"10m"`
	ConfirmWindow  time.Duration `env:"NEWSLETTER_CONFIRM_WINDOW" envDefault:"48h"`
	SMTPURL        string        `env:"SMTP_URL" envDefault:"smtp://127.0.0.1:1025"`
	MailFrom       string        `env:"MAIL_FROM" envDefault:"coworkjobs <newsletter@coworkjobs.example>"`
	OutboxInterval time.Duration `env:"OUTBOX_POLL_INTERVAL" envDefault:"1s"`
	// IdentitySecret seals the erasure link of every mail as the jobs
	// service opens it (libs/privacy).
	IdentitySecret string `env:"INTERNAL_IDENTITY_SECRET"`
}

func (c workerConfig) Validate() error {
	errs := []error{c.WorkerConfig.Validate(), config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL)}
	if len(c.TokenSecret) < newsletterbus.MinSecretLen {
		errs = append(errs, errors.New("NEWSLETTER_TOKEN_SECRET must be at least 32 characters"))
	}
	if len(c.IdentitySecret) < 32 {
		errs = append(errs, errors.New("INTERNAL_IDENTITY_SECRET must be at least 32 characters (it seals the mails' erasure links)"))
	}
	if c.ResendInterval <= 0 || c.ConfirmWindow <= 0 || c.OutboxInterval <= 0 {
		errs = append(errs, errors.New("NEWSLETTER_RESEND_INTERVAL, NEWSLETTER_CONFIRM_WINDOW and OUTBOX_POLL_INTERVAL must be positive"))
	}
	return errors.Join(errs...)
}

// redact hides SMTP credentials in logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "invalid"
	}
	return u.Redacted()
}
