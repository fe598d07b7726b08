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

// UPSTREAM_BALANCE takes the two modes only, and DNS balancing needs a
// resolve interval a resolver can keep up with.
func TestUpstreamBalanceConfig(t *testing.T) {
	t.Setenv("INTERNAL_IDENTITY_SECRET", "0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		balance, every string
		ok             bool
	}{
		{"connection", "1s", true},
		{"dns", "1s", true},
		{"dns", "250ms", true},
		{"random", "1s", false},
		{"", "1s", true}, // unset: the default, connection
		{"dns", "10ms", false},
	} {
		t.Setenv("UPSTREAM_BALANCE", tc.balance)
		t.Setenv("UPSTREAM_RESOLVE_INTERVAL", tc.every)
		cfg, err := parseConfig()
		if (err == nil) != tc.ok {
			t.Errorf("UPSTREAM_BALANCE=%q UPSTREAM_RESOLVE_INTERVAL=%s: err %v, want ok=%v", tc.balance, tc.every, err, tc.ok)
		}
		if err == nil && tc.balance == "" && cfg.UpstreamBalance != "connection" {
			t.Errorf("unset UPSTREAM_BALANCE gives %q", cfg.UpstreamBalance)
		}
	}
}
