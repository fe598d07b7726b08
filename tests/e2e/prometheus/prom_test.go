package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// prom is a running Prometheus and its HTTP API.
type prom struct {
	URL string
	log string
}

// repoRoot is where scripts/ lives (go test runs in the package's directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "prometheus.sh")); err != nil {
		t.Fatalf("no scripts/prometheus.sh under %s: %v", root, err)
	}
	return root
}

// needPrometheus skips the test when Debian's prometheus package is not
// installed, except on CI, where a missing binary is a failure.
func needPrometheus(t *testing.T) {
	t.Helper()
	ci := os.Getenv("CI")
	onCI := ci != "" && ci != "false" && ci != "0"
	for _, b := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(b); err != nil {
			if onCI {
				t.Fatalf("%s is not installed (CI=%s): scripts/deps.sh test installs Debian's prometheus package", b, os.Getenv("CI"))
			}
			t.Skipf("%s is not installed: run scripts/deps.sh test (Debian package prometheus) to run this test", b)
		}
	}
}

// startPrometheus runs scripts/prometheus.sh, as make run does, on a free
// port with a 1 s scrape and evaluation interval, scraping the admin port of
// every process in targets (name → admin base URL). It is stopped, by its
// pid, when the test ends.
func startPrometheus(t *testing.T, targets map[string]string, env ...string) *prom {
	t.Helper()
	addr, err := suite.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := []string{filepath.Join(repoRoot(t), "scripts", "prometheus.sh"), dir, addr}
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		args = append(args, n+"="+strings.TrimPrefix(targets[n], "http://"))
	}
	p := &prom{URL: "http://" + addr, log: filepath.Join(dir, "prometheus.log")}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", args...)
	// Pinned, whatever the caller's environment says: the chart's rules file,
	// the namespace the dashboard checks substitute.
	cmd.Env = append(append(os.Environ(), "PROMETHEUS_SCRAPE_INTERVAL=1s", "PROMETHEUS_EVAL_INTERVAL=1s",
		"PROMETHEUS_NAMESPACE=local", "PROMETHEUS_RULES=", "PROMETHEUS_CONFIG_ONLY="), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // the script execs prometheus: this pid is prometheus
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("----- prometheus log -----\n%s", tailOf(string(b), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("prometheus exited at start:\n%s", b)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready at %s", p.URL)
		}
	}
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// api GETs path from the HTTP API and decodes its data into v.
func (p *prom) api(path string, q url.Values, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u := p.URL + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s: %d %.300s", path, resp.StatusCode, raw)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, q, env.Error)
	}
	return json.Unmarshal(env.Data, v)
}

// sample is one series of an instant vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value() string {
	v, _ := s.Value[1].(string)
	return v
}

// query runs an instant query now and returns its series (a scalar result is
// one series without labels).
func (p *prom) query(expr string) ([]sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.api("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var out []sample
		return out, json.Unmarshal(data.Result, &out)
	case "scalar":
		var v [2]any
		return []sample{{Metric: map[string]string{}, Value: v}}, json.Unmarshal(data.Result, &v)
	}
	return nil, fmt.Errorf("query %s: result type %s", expr, data.ResultType)
}

// mustQuery is query that fails the test on an error.
func (p *prom) mustQuery(t *testing.T, expr string) []sample {
	t.Helper()
	out, err := p.query(expr)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return out
}

// target is an entry of /api/v1/targets.
type target struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

func (p *prom) targets() ([]target, error) {
	var data struct {
		Active []target `json:"activeTargets"`
	}
	err := p.api("/api/v1/targets", nil, &data)
	return data.Active, err
}

// alert is an entry of /api/v1/alerts: pending or firing.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (p *prom) alerts() ([]alert, error) {
	var data struct {
		Alerts []alert `json:"alerts"`
	}
	err := p.api("/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

// waitFor polls cond every 500 ms until it holds or limit passes; it returns
// the last error cond gave.
func waitFor(limit time.Duration, cond func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var errNotYet = errors.New("not yet")
