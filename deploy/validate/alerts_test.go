package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The alert rules are one plain Prometheus file, embedded by the chart's
// PrometheusRule and loaded as it is by scripts/prometheus.sh.
func rulesDir(t testing.TB) string { return filepath.Join(chartDir(t), "files", "prometheus") }

func readRulesFile(t testing.TB) monitoringv1.PrometheusRuleSpec {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(rulesDir(t), "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(src, &spec); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	return spec
}

func alertRules(spec monitoringv1.PrometheusRuleSpec) []monitoringv1.Rule {
	var out []monitoringv1.Rule
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

func checkRuleGroupsEqual(t *testing.T, got, want []monitoringv1.RuleGroup) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("the PrometheusRule's groups are not rules.yaml's:\n got %s\nwant %s", g, w)
	}
}

// promtool runs Debian's promtool; without it the test is skipped, except in
// CI (CI=true), where a missing promtool fails.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool not found and CI is set: scripts/deps.sh installs it (Debian package prometheus)")
		}
		t.Skip("promtool not found: `bash scripts/deps.sh test` installs it (Debian package prometheus); CI fails without it")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = rulesDir(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAlertRulesPromtool(t *testing.T) {
	t.Run("check", func(t *testing.T) {
		promtool(t, "check", "rules", "rules.yaml")
	})
	t.Run("unitTests", func(t *testing.T) {
		out := promtool(t, "test", "rules", "rules_test.yaml")
		if !strings.Contains(out, "SUCCESS") {
			t.Errorf("promtool test rules did not succeed:\n%s", out)
		}
	})
}

// Every alert has a unit test where it fires and one where it stays quiet.
func TestAlertRulesEachTested(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(rulesDir(t), "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name  string `json:"name"`
			Cases []struct {
				Alert     string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(src, &file); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(file.RuleFiles, []string{"rules.yaml"}) {
		t.Errorf("rules_test.yaml tests %v, want [rules.yaml]", file.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, c := range tc.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alert] = true
			} else {
				quiet[c.Alert] = true
			}
		}
	}
	rules := alertRules(readRulesFile(t))
	if len(rules) < 6 {
		t.Fatalf("%d alerts in rules.yaml", len(rules))
	}
	for _, r := range rules {
		if !fires[r.Alert] {
			t.Errorf("%s: no test case where it fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s: no test case where it stays quiet", r.Alert)
		}
	}
}

var runbookBase = "https://github.com/coworkjobs/coworkjobs/blob/main/docs/runbooks.md#"

// Every alert waits (for:), says how bad it is and what it means, and links
// its section of docs/runbooks.md, which says what it means, what to check
// first and how to fix it.
func TestAlertRulesShape(t *testing.T) {
	runbooks, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, sec := range strings.Split("\n"+string(runbooks), "\n## ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		sections[strings.ToLower(strings.TrimSpace(title))] = body
	}
	for _, r := range alertRules(readRulesFile(t)) {
		if r.For == nil || *r.For == "" || *r.For == "0s" || *r.For == "0m" {
			t.Errorf("%s: no for:", r.Alert)
		}
		if r.Labels["severity"] != "critical" && r.Labels["severity"] != "warning" {
			t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: no summary or description", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
		if !ok || anchor != strings.ToLower(r.Alert) {
			t.Errorf("%s: runbook_url %q, want %s%s", r.Alert, r.Annotations["runbook_url"], runbookBase, strings.ToLower(r.Alert))
			continue
		}
		body, ok := sections[anchor]
		if !ok {
			t.Errorf("%s: no section ## %s in docs/runbooks.md", r.Alert, r.Alert)
			continue
		}
		for _, part := range []string{"Meaning", "First checks", "Fixes"} {
			if !strings.Contains(body, "**"+part+".**") {
				t.Errorf("docs/runbooks.md ## %s: no **%s.**", r.Alert, part)
			}
		}
	}
}

var (
	selectorRe = regexp.MustCompile(`([a-z_]+)(=~|!=|=)"([^"]*)"`)
	metricRe   = regexp.MustCompile(`([a-z_:]+)\{([^}]*)\}`)
)

// The rules select only labels any scrape configuration can set: every
// series selector carries job="coworkjobs", and besides the metrics' own
// labels, only service and namespace are used. The chart's ServiceMonitor
// gives its targets exactly that job.
func checkRulesLabelContract(t *testing.T, objs []object) {
	t.Helper()
	targetLabels := map[string]bool{"job": true, "service": true, "namespace": true}
	metricLabels := map[string]bool{"status_class": true, "dependency": true, "outcome": true, "le": true}
	for _, r := range alertRules(readRulesFile(t)) {
		expr := r.Expr.String()
		for _, m := range metricRe.FindAllStringSubmatch(expr, -1) {
			if !strings.Contains(m[2], `job="coworkjobs"`) {
				t.Errorf("%s: %s{%s} does not select job=\"coworkjobs\"", r.Alert, m[1], m[2])
			}
			for _, sel := range selectorRe.FindAllStringSubmatch(m[2], -1) {
				if !targetLabels[sel[1]] && !metricLabels[sel[1]] {
					t.Errorf("%s: selects on label %s, which no scrape configuration sets", r.Alert, sel[1])
				}
			}
		}
	}
	sms := find[*monitoringv1.ServiceMonitor](objs)
	if len(sms) != 1 {
		t.Fatalf("%d ServiceMonitors", len(sms))
	}
	sel, err := metav1LabelSelector(&sms[0].Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range find[*corev1.Service](objs) {
		if !sel.Matches(labels.Set(s.Labels)) {
			continue
		}
		n++
		if job := s.Labels[sms[0].Spec.JobLabel]; job != "coworkjobs" {
			t.Errorf("Service %s would be scraped as job %q (jobLabel %q), want coworkjobs", s.Name, job, sms[0].Spec.JobLabel)
		}
	}
	if n == 0 {
		t.Error("the ServiceMonitor selects no Service")
	}
}

// metrics.prometheusRule.disabled leaves alerts out, extraRules adds a group,
// and an unknown name in disabled fails the render instead of doing nothing.
func TestChartPrometheusRuleOverrides(t *testing.T) {
	on := func(pr map[string]any) map[string]any {
		pr["enabled"] = true
		return map[string]any{"metrics": map[string]any{"prometheusRule": pr}}
	}
	extra := map[string]any{"alert": "MyStricter5xx", "expr": `sum(rate(http_requests_total{job="coworkjobs", status_class="5xx"}[5m])) > 1`, "for": "5m",
		"labels": map[string]any{"severity": "critical"}}
	r := renderValues(t, "overrides", on(map[string]any{"disabled": []any{"CoworkjobsHigh5xxRatio"}, "extraRules": []any{extra}}))
	rules := find[*monitoringv1.PrometheusRule](r.objs)
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules", len(rules))
	}
	got := map[string]string{}
	for _, g := range rules[0].Spec.Groups {
		for _, rule := range g.Rules {
			got[rule.Alert] = g.Name
		}
	}
	if _, ok := got["CoworkjobsHigh5xxRatio"]; ok {
		t.Error("a disabled alert is still rendered")
	}
	if got["MyStricter5xx"] != "coworkjobs.extra" {
		t.Errorf("extra rule in group %q, want coworkjobs.extra", got["MyStricter5xx"])
	}
	if len(got) != len(alertRules(readRulesFile(t))) {
		t.Errorf("%d alerts rendered, want the file's minus one plus one", len(got))
	}
	if _, err := renderChart(t, on(map[string]any{"disabled": []any{"CoworkjobsHigh5xxRatioo"}}), nil); err == nil || !strings.Contains(err.Error(), "no alert CoworkjobsHigh5xxRatioo") {
		t.Errorf("a misspelt disabled alert: %v, want a render error", err)
	}
}
