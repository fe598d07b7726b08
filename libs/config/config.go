// Package config reads a service's configuration from environment variables
// (defaults declared on the struct tags) and validates it once, at start.
package config

import (
	"errors"
	"fmt"

	"github.com/caarlos0/env/v11"
)

// Validator is implemented by configuration structs that check their values.
type Validator interface {
	Validate() error
}

// Parse fills cfg from the environment and validates it. Every problem is
// reported at once so an operator fixes a deployment in one go.
func Parse(cfg any) error {
	if err := env.Parse(cfg); err != nil {
		return fmt.Errorf("parse environment: %w", err)
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
	}
	return nil
}

// Common is what every service reads: HTTP server settings sit in web.Config;
// these are the shared dependencies.
type Common struct {
	ServiceName    string `env:"SERVICE_NAME"`
	LogLevel       string `env:"LOG_LEVEL" envDefault:"info"`
	DatabaseURL    string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	DBMaxConns     int32  `env:"DB_MAX_CONNS" envDefault:"10"`
	IdentitySecret string `env:"INTERNAL_IDENTITY_SECRET"`
	// MigrateOnly makes an API command apply its schema's migrations and exit:
	// the Helm chart's pre-install/pre-upgrade hook Job runs the images so.
	MigrateOnly bool `env:"MIGRATE_ONLY"`
}

// Validate checks the shared part.
func (c Common) Validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is empty"))
	}
	if len(c.IdentitySecret) < 32 {
		errs = append(errs, errors.New("INTERNAL_IDENTITY_SECRET must be at least 32 characters"))
	}
	if c.DBMaxConns < 1 {
		errs = append(errs, errors.New("DB_MAX_CONNS must be positive"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL %q is not one of debug, info, warn, error", c.LogLevel))
	}
	return errors.Join(errs...)
}
