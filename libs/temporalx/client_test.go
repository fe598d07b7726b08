package temporalx_test

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

// workerConfig is a worker command's struct: WorkerConfig and its own.
type workerConfig struct {
	temporalx.WorkerConfig
	Own string `env:"OWN" envDefault:"x"`
}

// A worker's struct reads the database, the admin port and Temporal through
// WorkerConfig, and libs/service finds the parts it starts from.
func TestWorkerConfig(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "temporal:7233")
	t.Setenv("ADMIN_ADDR", ":9191")
	var cfg workerConfig
	if err := config.Parse(&cfg, config.WorkerDefaults()); err != nil {
		t.Fatal(err)
	}
	if cfg.Temporal.TemporalAddress != "temporal:7233" || cfg.Temporal.TemporalNamespace != "default" ||
		cfg.AdminAddr != ":9191" || cfg.DBMaxConns != 5 || cfg.Own != "x" {
		t.Fatalf("parsed %+v", cfg)
	}
	var _ interface{ AdminSettings() *config.Admin } = &cfg
	var _ interface{ BaseSettings() *config.Base } = &cfg

	cfg.LogLevel, cfg.Temporal.TemporalNamespace = "loud", ""
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") || !strings.Contains(err.Error(), "TEMPORAL_NAMESPACE") {
		t.Fatalf("Validate() = %v, want the LOG_LEVEL and Temporal problems", err)
	}
}
