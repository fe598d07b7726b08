package prometheus

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// The alerts a stopped backend must set off (charts/coworkjobs/files/prometheus/rules.yaml):
// its /metrics is gone, and the gateway's health poll cannot reach it.
const (
	targetDownAlert = "CoworkjobsTargetDown"
	backendAlert    = "CoworkjobsBackendNotReady"
)

// The load alerts a burst on a small machine may justify (see checkQuiet),
// the latency alert's threshold (p99 above 1 s), and how long the gateway's
// health poll waits for a backend's /readyz (services/gateway/internal/app/health).
const (
	latencyAlert       = "CoworkjobsHighLatencyP99"
	latencyThreshold   = time.Second
	poolAlert          = "CoworkjobsPostgresPoolSaturated"
	gatewayPollTimeout = 800 * time.Millisecond
)

// release is the service label prefix scripts/prometheus.sh gives each target
// (a Kubernetes Service is named <release>-<component>).
const release = "coworkjobs-"

func TestPrometheusUnderTraffic(t *testing.T) {
	needPrometheus(t)
	began := time.Now()

	// Temporal, so that the workers run workflows and activities and their
	// panels have data; a mail catcher, so that the opt-in workflows finish.
	temporal := faults.Temporal(t)
	t.Logf("Temporal up after %s", time.Since(began).Round(100*time.Millisecond))
	smtp := startMailCatcher(t)
	t.Logf("Temporal, the built commands and the mail catcher ready after %s", time.Since(began).Round(100*time.Millisecond))

	sys := suite.StartTest(t, suite.Options{
		Name: "prom", DatabaseURL: dbURL, Admin: true, Keys: true,
		Workers: []string{"jobs-worker", "community-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtp,
			"JOBS_SWEEP_INTERVAL=2s", "JOBS_RELAY_INTERVAL=200ms", "OUTBOX_POLL_INTERVAL=200ms", "NEWSLETTER_CONFIRM_WINDOW=3s"},
	})
	p := startPrometheus(t, sys.Admin)
	t.Logf("suite, Temporal and Prometheus up in %s", time.Since(began).Round(time.Second))

	// Every process scraped once before the traffic: what follows is
	// measured from a clean start.
	if err := waitFor(30*time.Second, func() error { return allUp(p, sys.Admin) }); err != nil {
		t.Fatalf("before the traffic: %v", err)
	}
	from := time.Now()
	tl := traffic(t, sys, 20*time.Second, 12)
	t.Logf("traffic (20 s, 12 clients): %s", tl)
	// A few more scrapes and rule evaluations after the last request.
	time.Sleep(4 * time.Second)
	window := strconv.Itoa(int(time.Since(from).Seconds())+2) + "s"

	t.Run("traffic", func(t *testing.T) { checkTraffic(t, p, tl, window) })
	t.Run("targets", func(t *testing.T) { checkTargets(t, p, sys.Admin, window) })
	t.Run("rules", func(t *testing.T) { checkRules(t, p) })
	t.Run("alerts quiet", func(t *testing.T) { checkQuiet(t, p, window, tl) })
	t.Run("dashboards", func(t *testing.T) { checkDashboards(t, p, sys.Admin) })
	t.Run("backend stopped", func(t *testing.T) { checkTargetDown(t, p, sys, "content", tl) })
	t.Logf("whole test: %s", time.Since(began).Round(time.Second))
}

// startMailCatcher runs the suite's mail catcher on a free port and returns
// its address.
func startMailCatcher(t *testing.T) string {
	t.Helper()
	bin, err := suite.Build()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := suite.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "mailcatcher"))
	cmd.Env = append(os.Environ(), "MAILCATCHER_ADDR="+addr, "MAILCATCHER_DIR="+t.TempDir(), "LOG_LEVEL=warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if err := waitFor(20*time.Second, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatalf("mail catcher: %v", err)
	}
	return addr
}

// allUp is nil when every process (and Prometheus itself) is a healthy
// target that has been scraped.
func allUp(p *prom, admin map[string]string) error {
	ts, err := p.targets()
	if err != nil {
		return err
	}
	if len(ts) != len(admin)+1 {
		return fmt.Errorf("%d targets, want %d (every process and Prometheus itself)", len(ts), len(admin)+1)
	}
	for _, tg := range ts {
		if tg.Health != "up" || tg.LastError != "" {
			return fmt.Errorf("target %s (%s): health %s, last error %q", tg.Labels["service"], tg.ScrapeURL, tg.Health, tg.LastError)
		}
	}
	return nil
}

// checkTraffic makes sure the traffic was what it claims to be, so that the
// checks after it cannot pass on an idle system.
func checkTraffic(t *testing.T, p *prom, tl *tally, window string) {
	tl.mu.Lock()
	for _, code := range []int{200, 201, 401, 403, 404, 405, 413, 429} {
		if tl.status[code] == 0 {
			t.Errorf("the traffic got no %d answer: %s", code, tl)
		}
	}
	tl.mu.Unlock()
	expect := map[string]string{
		"gateway 4xx":            `sum(increase(http_requests_total{service="coworkjobs-gateway", status_class="4xx"}[` + window + `])) > 100`,
		"gateway 2xx":            `sum(increase(http_requests_total{service="coworkjobs-gateway", status_class="2xx"}[` + window + `])) > 100`,
		"backends refused":       `sum(increase(http_requests_total{service=~"coworkjobs-(jobs|directory|content|community)", status_class="4xx"}[` + window + `])) > 0`,
		"TRACE and CONNECT":      `sum(increase(http_requests_total{service="coworkjobs-gateway", method=~"TRACE|CONNECT"}[` + window + `])) > 0`,
		"rate limited":           `sum(increase(gateway_rate_limit_decisions_total{outcome="denied"}[` + window + `])) > 0`,
		"jobs created":           `sum(increase(jobs_writes_total{outcome="created"}[` + window + `])) > 0`,
		"jobs replayed":          `sum(increase(jobs_writes_total{outcome="replayed"}[` + window + `])) > 0`,
		"jobs unpublished":       `sum(increase(jobs_writes_total{outcome=~"unpublished|already_unpublished"}[` + window + `])) > 0`,
		"jobs-worker workflows":  `sum(temporal_workflow_runs_finished_total{service="coworkjobs-jobs-worker"}) > 0`,
		"jobs-worker activities": `sum(temporal_activity_executions_total{service="coworkjobs-jobs-worker"}) > 0`,
	}
	for what, expr := range expect {
		if got := p.mustQuery(t, expr); len(got) == 0 {
			t.Errorf("%s: nothing for %s", what, expr)
		}
	}
	// The method label holds the standard methods and OTHER, nothing else,
	// however odd, long or lowercase the methods sent. (Methods Fiber does
	// not know are answered 405 by libs/web before any middleware, so they
	// are not counted at all.)
	for _, s := range p.mustQuery(t, `count by (service, method) (http_requests_total{job="coworkjobs", method!~"GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|CONNECT|TRACE|OTHER"})`) {
		t.Errorf("%s: method label %q", s.Metric["service"], s.Metric["method"])
	}
	// Not required (the window is short on a loaded machine), but said.
	if got := p.mustQuery(t, `sum by (workflow_type, outcome) (temporal_workflow_runs_finished_total{service="coworkjobs-community-worker"})`); len(got) == 0 {
		t.Logf("the community worker finished no workflow run yet")
	}
}

// checkTargets: every target answered every scrape of the window, and
// Prometheus dropped no sample of any scrape.
func checkTargets(t *testing.T, p *prom, admin map[string]string, window string) {
	if err := allUp(p, admin); err != nil {
		t.Error(err)
	}
	// Every scrape of the window, not only the last one: a /metrics that
	// fails after some traffic and recovers would hide from the targets page.
	got := p.mustQuery(t, `min_over_time(up[`+window+`])`)
	seen := map[string]bool{}
	for _, s := range got {
		seen[s.Metric["job"]+"/"+s.Metric["service"]] = true
		if s.value() != "1" {
			t.Errorf("%s (%s) was down during the traffic: min(up) = %s", s.Metric["service"], s.Metric["instance"], s.value())
		}
	}
	for name := range admin {
		if !seen["coworkjobs/"+release+name] {
			t.Errorf("no up series for %s", name)
		}
	}
	for _, s := range p.mustQuery(t, `min_over_time(scrape_samples_scraped{job="coworkjobs"}[`+window+`]) == 0`) {
		t.Errorf("%s: a scrape without samples", s.Metric["service"])
	}
	// Samples a scrape carried that the TSDB refused: the same series twice
	// in one scrape (a label value rewritten under the exporter), out of
	// order, out of bounds, or beyond a limit. Each counter must exist, so
	// that a renamed one cannot make this pass.
	for _, c := range []string{
		"prometheus_target_scrapes_sample_duplicate_timestamp_total",
		"prometheus_target_scrapes_sample_out_of_order_total",
		"prometheus_target_scrapes_sample_out_of_bounds_total",
		"prometheus_target_scrapes_exceeded_sample_limit_total",
		"prometheus_target_scrapes_exceeded_body_size_limit_total",
		"prometheus_target_scrape_pool_exceeded_label_limits_total",
		"prometheus_target_scrape_pool_exceeded_target_limit_total",
		"prometheus_target_scrapes_exemplar_out_of_order_total",
	} {
		got := p.mustQuery(t, c)
		if len(got) == 0 {
			t.Errorf("Prometheus exports no %s", c)
		}
		for _, s := range got {
			if s.value() != "0" {
				t.Errorf("%s = %s", c, s.value())
			}
		}
	}
	// What the scrape manager logged (e.g. "Error on ingesting samples").
	if b, err := os.ReadFile(p.log); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "scrape") && (strings.Contains(line, "level=warn") || strings.Contains(line, "level=error")) {
				t.Errorf("prometheus: %s", line)
			}
		}
	}
}

// checkRules: the chart's rules are all loaded and evaluate without error on
// the real series.
func checkRules(t *testing.T, p *prom) {
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Type      string `json:"type"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.api("/api/v1/rules", nil, &data); err != nil {
		t.Fatal(err)
	}
	alerts := 0
	names := map[string]bool{}
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			if r.Type == "alerting" {
				alerts++
				names[r.Name] = true
			}
			if r.Health != "ok" || r.LastError != "" {
				t.Errorf("rule %s › %s: health %s %s", g.Name, r.Name, r.Health, r.LastError)
			}
		}
	}
	if alerts < 5 || !names[targetDownAlert] || !names[backendAlert] {
		t.Errorf("%d alerting rules loaded (%v), want the chart's, %s and %s among them", alerts, names, targetDownAlert, backendAlert)
	}
	for _, s := range p.mustQuery(t, `sum(prometheus_rule_evaluation_failures_total) > 0`) {
		t.Errorf("rule evaluations failed: %s", s.value())
	}
}

// checkQuiet: no alert was pending or firing at any evaluation during the
// traffic (ALERTS keeps a series per evaluation an alert was active at), nor
// is now. The traffic holds no fault: 4xx and 429s are answers, not errors,
// so no fault alert may ever be active. It is a burst, though (minutes'
// worth in seconds, on a small machine): a load alert may go pending, never
// firing, when what the clients saw confirms it (see loadJustified).
func checkQuiet(t *testing.T, p *prom, window string, tl *tally) {
	for _, s := range p.mustQuery(t, `max_over_time(ALERTS[`+window+`])`) {
		ok, why := loadJustified(p, tl, s.Metric, s.Metric["alertstate"])
		if ok {
			t.Logf("%s was pending during the burst, justified: %s", s.Metric["alertname"], why)
			continue
		}
		t.Errorf("alert %s was %s during the traffic (%s): %v", s.Metric["alertname"], s.Metric["alertstate"], why, s.Metric)
	}
	as, err := p.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if ok, why := loadJustified(p, tl, a.Labels, a.State); !ok {
			t.Errorf("alert %s is %s (%s): %v", a.Labels["alertname"], a.State, why, a.Labels)
		}
	}
}

// loadJustified says whether an active alert is a load alert, pending, that
// the clients' own view of the traffic confirms for its service:
//   - the latency alert, when the clients timed that service's answers with
//     a p99 above the threshold over some prefix of the traffic (the rule's
//     5 minute window is longer than the test: it sees prefixes);
//   - the pool alert, when the clients had at least 90% of that service's
//     pool size in requests in flight towards it (each holds a connection);
//   - the backend-not-ready alert, when the clients waited longer than the
//     gateway's health poll does for some answer of that backend: one poll
//     timed out under the same load, and the alert's for: (minutes) is
//     there to ride such a moment out.
func loadJustified(p *prom, tl *tally, l map[string]string, state string) (bool, string) {
	service := strings.TrimPrefix(l["service"], release)
	switch l["alertname"] {
	case backendAlert:
		dep := l["dependency"]
		w := tl.slowest(dep)
		why := fmt.Sprintf("the clients' slowest answer of %s took %s, the gateway's poll waits %s", dep, w.Round(time.Millisecond), gatewayPollTimeout)
		return state == "pending" && w > gatewayPollTimeout, why
	case latencyAlert:
		w := tl.worstP99(service)
		why := fmt.Sprintf("the clients' worst p99 of %s was %s", service, w.Round(time.Millisecond))
		return state == "pending" && w > latencyThreshold, why
	case poolAlert:
		got, err := p.query(`max(pgxpool_max_connections{job="coworkjobs", service="` + release + service + `"})`)
		if err != nil || len(got) == 0 {
			return false, fmt.Sprintf("no pool size for %s (%v)", service, err)
		}
		size, _ := strconv.ParseFloat(got[0].value(), 64)
		in := tl.maxInFlight(service)
		why := fmt.Sprintf("the clients had up to %d requests in flight towards %s, its pool holds %g", in, service, size)
		return state == "pending" && size > 0 && float64(in) >= 0.9*size, why
	}
	return false, "not a load alert"
}

// checkDashboards runs every panel query of every dashboard in the chart
// with its variables substituted as Grafana would for "All", and every query
// variable: each must return at least one series, and every process, the
// workers too, must appear in them.
func checkDashboards(t *testing.T, p *prom, admin map[string]string) {
	panels, variables := dashboards(t)
	values := map[string]string{"datasource": "prometheus", "namespace": "local", "service": ".*",
		"__rate_interval": "1m", "__interval": "15s", "__range": "5m", "__range_s": "300"}
	for _, v := range variables {
		expr, err := substitute(v.Expr, values)
		if err != nil {
			t.Errorf("%s: %v", v.Where, err)
			continue
		}
		got, err := p.variableValues(expr)
		if err != nil || len(got) == 0 {
			t.Errorf("%s: %s gives no values (%v)", v.Where, expr, err)
		}
	}
	shown := map[string]bool{}
	for _, q := range panels {
		expr, err := substitute(q.Expr, values)
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		got, err := p.query(expr)
		switch {
		case err != nil:
			t.Errorf("%s: %v", q.Where, err)
		case len(got) == 0:
			t.Errorf("%s: no series for %s", q.Where, expr)
		}
		for _, s := range got {
			shown[strings.TrimPrefix(s.Metric["service"], release)] = true
			shown[s.Metric["pod"]] = true
		}
	}
	t.Logf("%d panel queries and %d variables checked", len(panels), len(variables))
	var missing []string
	for name := range admin {
		if !shown[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no dashboard panel shows %v", missing)
	}
}

// checkTargetDown stops a backend and waits for the alerts that name it to
// go pending: its target-down alert (Prometheus cannot scrape it) and the
// gateway's backend-not-ready alert (the gateway's health poll cannot reach
// it), and no other alert. Their for: is minutes long, as shipped: firing is
// the rules' unit tests' to prove (rules_test.yaml); pending proves each
// expression matches the real series of the fault. Started again, both clear.
func checkTargetDown(t *testing.T, p *prom, sys *suite.Suite, name string, tl *tally) {
	stopped := time.Now()
	if err := sys.Terminate(name); err != nil {
		t.Fatal(err)
	}
	isExpected := func(a alert) bool {
		return (a.Labels["alertname"] == targetDownAlert && a.Labels["service"] == release+name) ||
			(a.Labels["alertname"] == backendAlert && a.Labels["dependency"] == name)
	}
	var last []alert
	err := waitFor(30*time.Second, func() error {
		as, err := p.alerts()
		if err != nil {
			return err
		}
		last = as
		seen := map[string]bool{}
		for _, a := range as {
			if isExpected(a) && (a.State == "pending" || a.State == "firing") {
				seen[a.Labels["alertname"]] = true
			}
		}
		if !seen[targetDownAlert] || !seen[backendAlert] {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s stopped: want %s and %s for it within 30 s, have %v", name, targetDownAlert, backendAlert, last)
	}
	t.Logf("%s stopped: %s and %s active after %s", name, targetDownAlert, backendAlert, time.Since(stopped).Round(100*time.Millisecond))
	for _, a := range last {
		if ok, _ := loadJustified(p, tl, a.Labels, a.State); !isExpected(a) && !ok {
			t.Errorf("%s stopped: unexpected alert %s (%s) %v", name, a.Labels["alertname"], a.State, a.Labels)
		}
	}
	if err := sys.Start(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, func() error {
		as, err := p.alerts()
		for _, a := range as {
			if isExpected(a) {
				return fmt.Errorf("still active: %v", a)
			}
		}
		return err
	}); err != nil {
		t.Errorf("%s started again: %v", name, err)
	}
}
