// Package config reads a command's configuration from environment variables
// (defaults declared on the struct tags) and validates it once, at start.
// A command's struct embeds the parts below that it shares with the others;
// libs/service finds them there through their Settings methods.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/caarlos0/env/v11"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Validator is implemented by configuration structs that check their values.
type Validator interface {
	Validate() error
}

// Parse fills cfg from the environment and validates it. Every problem is
// reported at once so an operator fixes a deployment in one go. defaults
// are the command's own defaults where they differ from the struct tags'
// (a worker's smaller pool, say); a variable set (not empty) in the
// environment wins.
func Parse(cfg any, defaults map[string]string) error {
	environ := make(map[string]string, len(defaults))
	for k, v := range defaults {
		environ[k] = v
	}
	for _, kv := range os.Environ() {
		// Empty is unset, as for the struct tags' defaults.
		if k, v, ok := strings.Cut(kv, "="); ok && (v != "" || environ[k] == "") {
			environ[k] = v
		}
	}
	if err := env.ParseWithOptions(cfg, env.Options{Environment: environ}); err != nil {
		return fmt.Errorf("parse environment: %w", err)
	}
	if v, ok := cfg.(Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("invalid configuration: %w", err)
		}
	}
	return nil
}

// Base is what every command reads.
type Base struct {
	// LogLevel sets the level of the JSON logs (libs/logx).
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
}

// BaseSettings returns b, so that libs/service finds it in any struct that embeds it.
func (b *Base) BaseSettings() *Base { return b }

// Validate checks LOG_LEVEL.
func (b Base) Validate() error {
	switch b.LogLevel {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("LOG_LEVEL %q is not one of debug, info, warn, error", b.LogLevel)
}

// Common is what every command with a database reads: the APIs, the
// workers, the seeders and the operators' tools.
type Common struct {
	Base
	ServiceName string `env:"SERVICE_NAME"`
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	DBMaxConns  int32  `env:"DB_MAX_CONNS" envDefault:"10"`
	// DatabaseReadURL names a streaming replica of DATABASE_URL's server for
	// the reads an API allows there (pg.Reads); empty: every read on the primary.
	DatabaseReadURL string `env:"DATABASE_READ_URL"`
	// RedisURL names the Redis that holds the change versions (libs/changes)
	// a service bumps after each write, for the gateway's ETags and response
	// cache; empty: none. Set it on every process that writes a scope or on
	// none (a writer that does not bump leaves the gateway's cache stale).
	RedisURL string `env:"REDIS_URL"`
	// RedisKeyPrefix starts every Redis key (the gateway's rate-limit
	// windows, the change versions): the same on every process of one
	// deployment, different between deployments that share a Redis.
	RedisKeyPrefix string `env:"REDIS_KEY_PREFIX" envDefault:"cj:rl:"`
}

// CommonSettings returns c, so that libs/service finds it in any struct that embeds it.
func (c *Common) CommonSettings() *Common { return c }

// Validate checks the shared part.
func (c Common) Validate() error {
	errs := []error{c.Base.Validate()}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is empty"))
	}
	if c.DBMaxConns < 1 {
		errs = append(errs, errors.New("DB_MAX_CONNS must be positive"))
	}
	return errors.Join(errs...)
}

// API is what every HTTP service reads.
type API struct {
	Common
	Web            web.Config
	IdentitySecret string `env:"INTERNAL_IDENTITY_SECRET"`
	// MigrateOnly makes an API command apply its schema's migrations and exit:
	// the Helm chart's pre-install/pre-upgrade hook Job runs the images so.
	MigrateOnly bool `env:"MIGRATE_ONLY"`
}

// APISettings returns c, so that libs/service finds it in any struct that embeds it.
func (c *API) APISettings() *API { return c }

// Validate checks the shared part, the server's and the identity secret.
func (c API) Validate() error {
	errs := []error{c.Common.Validate(), c.Web.Validate()}
	if len(c.IdentitySecret) < 32 {
		errs = append(errs, errors.New("INTERNAL_IDENTITY_SECRET must be at least 32 characters"))
	}
	return errors.Join(errs...)
}

// Admin is the side ports of a command without an API (the workers); an
// API reads the same variables in its web.Config.
type Admin struct {
	// AdminAddr serves /metrics and the probes (/livez, /readyz); "off" disables.
	AdminAddr string `env:"ADMIN_ADDR" envDefault:":9090"`
	// PprofAddr serves pprof (web.ServePprof); empty is off.
	PprofAddr string `env:"PPROF_ADDR"`
}

// AdminSettings returns a, so that libs/service finds it in any struct that embeds it.
func (a *Admin) AdminSettings() *Admin { return a }

// HTTPURL checks that the variable name holds an absolute http(s) URL (the
// public origin, another service's address).
func HTTPURL(name, value string) error {
	if u, err := url.Parse(value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http(s) URL", name)
	}
	return nil
}

// WorkerDefaults are a worker's defaults where they differ from the struct
// tags' (Parse): half the pool of an API, for a few activities and a relay.
func WorkerDefaults() map[string]string { return map[string]string{"DB_MAX_CONNS": "5"} }
