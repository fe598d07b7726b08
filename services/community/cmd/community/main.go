// Command community serves events, the events feed, feedback and the
// newsletter routes. The double opt-in itself runs in community-worker.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/communityapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

func main() {
	spec := service.Spec{Name: "community", Schema: "community", Migrations: migrations.FS, Changes: []string{scopes.Events}}
	service.Serve(spec, func(ctx context.Context, p *service.Process, cfg *appConfig) error {
		signer, err := newsletterbus.NewSigner(cfg.TokenSecret)
		if err != nil {
			return fmt.Errorf("newsletter tokens: %w", err)
		}
		sealer, err := privacy.NewSealer([]byte(cfg.IdentitySecret))
		if err != nil {
			return err
		}
		communityapp.Routes(p.API.App, communityapp.Config{Privacy: sealer,
			Pool: p.Pool, Reads: p.Reads, Codec: p.Codec, PublicBaseURL: cfg.PublicBaseURL, Signer: signer,
			ConsentVersion: cfg.ConsentVersion, ResendInterval: cfg.ResendInterval,
		})
		return nil
	})
}

type appConfig struct {
	config.API
	PublicBaseURL  string        `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	TokenSecret    string        `env:"NEWSLETTER_TOKEN_SECRET"`
	ConsentVersion string        `env:"NEWSLETTER_CONSENT_VERSION" envDefault:"2026-01"`
	ResendInterval time.Duration `env:"NEWSLETTER_RESEND_INTERVAL" envDefault:"10m"`
}

func (c appConfig) Validate() error {
	errs := []error{c.API.Validate(), config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL)}
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
