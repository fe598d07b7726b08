package main

import (
	"os"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/config"
)

// parseConfig reads the environment as the gateway's start-up does.
func parseConfig() (appConfig, error) {
	var cfg appConfig
	err := config.Parse(&cfg, spec().Defaults)
	return cfg, err
}

// The gateway serves fewer connections at once than the backends unless told
// otherwise; an operator's HTTP_CONCURRENCY wins.
func TestGatewayConcurrencyDefault(t *testing.T) {
	t.Setenv("INTERNAL_IDENTITY_SECRET", "0123456789abcdef0123456789abcdef")
	t.Setenv("HTTP_CONCURRENCY", "")
	if err := os.Unsetenv("HTTP_CONCURRENCY"); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Web.Concurrency != gatewayConcurrency {
		t.Fatalf("HTTP_CONCURRENCY unset: %d connections, want %d", cfg.Web.Concurrency, gatewayConcurrency)
	}
	t.Setenv("HTTP_CONCURRENCY", "300")
	if cfg, err = parseConfig(); err != nil {
		t.Fatal(err)
	}
	if cfg.Web.Concurrency != 300 {
		t.Fatalf("HTTP_CONCURRENCY=300: %d connections", cfg.Web.Concurrency)
	}
	t.Setenv("HTTP_CONCURRENCY", "0")
	if _, err = parseConfig(); err == nil {
		t.Fatal("HTTP_CONCURRENCY=0 was accepted")
	}
}
