package temporalx

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/coworkjobs/coworkjobs/libs/config"
)

// Config is where a worker finds Temporal (WorkerConfig holds it).
type Config struct {
	TemporalAddress   string `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
}

// Validate checks that both are set.
func (c Config) Validate() error {
	if c.TemporalAddress == "" || c.TemporalNamespace == "" {
		return errors.New("TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE must be set")
	}
	return nil
}

// WorkerConfig is what a worker command reads beside its own settings: the
// database, the admin port and Temporal; its struct embeds it.
type WorkerConfig struct {
	config.Common
	config.Admin
	Temporal Config
}

// Validate checks the database's settings and Temporal's.
func (c WorkerConfig) Validate() error {
	return errors.Join(c.Common.Validate(), c.Temporal.Validate())
}

// NewClient returns a lazy client of cfg's Temporal with the tracing
// interceptor and, on reg, the outcome counters (Interceptors); both apply to
// the workers built on it too. Nothing dials before the first call, so a
// worker process starts (and its outbox relay runs) while Temporal is still
// coming up: make run starts Temporal beside the services.
func NewClient(cfg Config, reg prometheus.Registerer, log *slog.Logger) (client.Client, error) {
	interceptors, err := Interceptors(reg)
	if err != nil {
		return nil, fmt.Errorf("temporal interceptors: %w", err)
	}
	c, err := client.NewLazyClient(client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Logger: tlog.NewStructuredLogger(log), Interceptors: interceptors,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal client for %s: %w", cfg.TemporalAddress, err)
	}
	return c, nil
}
