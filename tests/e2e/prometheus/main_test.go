// Package prometheus proves the observability of the running suite with a
// real Prometheus (Debian's package), started by scripts/prometheus.sh exactly
// as make run starts it: every service and worker is scraped on its admin
// port, the chart's alert rules are evaluated on real series, and every query
// of the chart's Grafana dashboards is run. Mixed, concurrent traffic (every
// route, odd methods, bad keys, 4xx, 429s, writes and replays, bodies of many
// sizes) must leave every target up, every scrape clean and every alert
// quiet; a backend stopped must make the target-down alert go pending.
package prometheus

import (
	"os"
	"testing"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "prom", &dbURL, nil)) }
