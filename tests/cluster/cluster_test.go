// Package cluster drives the Helm chart on a real single-node Kubernetes
// cluster as an operator would: install, helm test, a rolling restart under
// load, scaling, upgrades, a killed pod, Temporal cut off, uninstall.
// scripts/cluster.sh (make test-cluster) builds and starts the cluster and
// runs this with COWORKJOBS_CLUSTER set; without it every test skips.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

const (
	ns      = "coworkjobs"
	release = "coworkjobs"
	// The release's workload pods (not helm test's).
	workloads = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component!=test"
	// The operator's own Secret (secrets.existingSecret) and the read key
	// helm test uses.
	opSecret  = "coworkjobs-operator"
	keySecret = "coworkjobs-test-key"
)

var env struct {
	dir, nodeIP, chart, tag, databaseURL, redisURL, temporal, script string
}

func TestMain(m *testing.M) {
	if os.Getenv("COWORKJOBS_CLUSTER") == "" {
		fmt.Println("cluster: skipped (make test-cluster starts a cluster and runs this)")
		os.Exit(0)
	}
	env.dir = os.Getenv("CLUSTER_DIR")
	env.nodeIP = os.Getenv("CLUSTER_NODE_IP")
	env.chart = os.Getenv("CLUSTER_CHART")
	env.tag = os.Getenv("CLUSTER_IMAGE_TAG")
	env.databaseURL = os.Getenv("CLUSTER_DATABASE_URL")
	env.redisURL = os.Getenv("CLUSTER_REDIS_URL")
	env.temporal = os.Getenv("CLUSTER_TEMPORAL_ADDRESS")
	env.script = os.Getenv("CLUSTER_SCRIPT")
	os.Exit(m.Run())
}

// TestCluster is one scenario: each step builds on the state the one before
// left, so they run in order and a failed install stops the rest.
func TestCluster(t *testing.T) {
	c := &cluster{t: t, values: filepath.Join(t.TempDir(), "values.yaml")}
	if !t.Run("install", c.install) {
		c.dump()
		t.FailNow()
	}
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"only the gateway reaches a backend's API", c.networkPolicies},
		{"rolling restart under load loses nothing", c.rollingRestart},
		{"a scaled-out jobs pod gets its share", func(t *testing.T) {
			gatewayEndpoints(t, 2)
			c.scaleOutThen(t, func() { gatewayEndpoints(t, 3) })
			gatewayEndpoints(t, 2)
		}},
		{"HPA scale-out gets its share", c.hpaScaleOut},
		{"aged connections (upstreamBalance=connection): rollout and scale-out", c.connectionBalance},
		{"balance modes compared (CLUSTER_BALANCE_ROUNDS)", c.compareBalance},
		{"no-op upgrade replaces no pod", c.noopUpgrade},
		{"killed backend pod", c.killPod},
		{"workers without Temporal are not ready", c.temporalCut},
		{"a changed secret replaces exactly its readers", c.secretChange},
		{"uninstall leaves nothing", c.uninstall},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.fn) {
			c.dump()
		}
	}
}

type cluster struct {
	t       *testing.T
	gateway string // http://<ClusterIP>:8080
	key     string // a trusted importer's key
	values  string // the values file of the install
}

// --- commands ----------------------------------------------------------------

func run(t testing.TB, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := try(timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func try(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// stdout only: kubectl's warnings (deprecated kinds) go to stderr, which
	// comes back only with a failure.
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String() + stderr.String(), err
	}
	return out.String(), nil
}

func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, 5*time.Minute, "kubectl", append([]string{"-n", ns}, args...)...)
}

func helm(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, 10*time.Minute, "helm", append([]string{"-n", ns}, args...)...)
}

// dump prints what an operator would look at first when a step failed.
func (c *cluster) dump() {
	out, _ := try(time.Minute, "kubectl", "-n", ns, "get", "all,events", "-o", "wide")
	c.t.Logf("cluster state:\n%s", out)
}

// --- pods ----------------------------------------------------------------------

type pod struct {
	Name, IP, Component, ContainerID string
	Ready                            bool
	Restarts                         int
	Deleting                         bool
	Created                          string // RFC 3339, orders by age
}

func pods(t testing.TB, selector string) []pod {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				CreationTimestamp string            `json:"creationTimestamp"`
				Labels            map[string]string `json:"labels"`
				DeletionTimestamp *string           `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				PodIP      string `json:"podIP"`
				Conditions []struct {
					Type, Status string
				} `json:"conditions"`
				ContainerStatuses []struct {
					RestartCount int    `json:"restartCount"`
					ContainerID  string `json:"containerID"`
				} `json:"containerStatuses"`
			} `json:"status"`
		} `json:"items"`
	}
	args := []string{"get", "pods", "-o", "json"}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	if err := json.Unmarshal([]byte(kubectl(t, args...)), &list); err != nil {
		t.Fatalf("pods: %v", err)
	}
	var ps []pod
	for _, it := range list.Items {
		p := pod{Name: it.Metadata.Name, IP: it.Status.PodIP, Component: it.Metadata.Labels["app.kubernetes.io/component"],
			Deleting: it.Metadata.DeletionTimestamp != nil, Created: it.Metadata.CreationTimestamp}
		for _, cd := range it.Status.Conditions {
			if cd.Type == "Ready" {
				p.Ready = cd.Status == "True"
			}
		}
		for _, cs := range it.Status.ContainerStatuses {
			p.Restarts += cs.RestartCount
			p.ContainerID = strings.TrimPrefix(cs.ContainerID, "containerd://")
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

func podNames(ps []pod) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// eventually retries cond every half second until it holds or limit passes.
func eventually(t testing.TB, limit time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < limit {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s; last: %s", what, limit, last)
	return 0
}

// --- install -------------------------------------------------------------------

func (c *cluster) install(t *testing.T) {
	run(t, time.Minute, "kubectl", "create", "namespace", ns)
	kubectl(t, "create", "secret", "generic", opSecret,
		"--from-literal=DATABASE_URL="+env.databaseURL,
		"--from-literal=REDIS_URL="+env.redisURL,
		"--from-literal=SMTP_URL=smtp://coworkjobs-mailcatcher:1025",
		"--from-literal=INTERNAL_IDENTITY_SECRET="+suite.RandomHex(24),
		"--from-literal=NEWSLETTER_TOKEN_SECRET="+suite.RandomHex(24))
	if err := os.WriteFile(c.values, []byte(fmt.Sprintf(`
image:
  tag: %q
config:
  temporal:
    address: %q
  # The scenario measures how the jobs pods share repeated reads; answered
  # from the gateway's cache they would never reach them.
  responseCacheMB: 0
secrets:
  existingSecret: %s
mailcatcher:
  enabled: true
tests:
  image: coworkjobs/cluster-tools:%s
  apiKeySecret:
    name: %s
    key: api-key
apis:
  gateway:
    env:
      # The scenario's load comes from one key and one address.
      WRITE_RATE_LIMIT_PER_MINUTE: "1000000"
      PUBLIC_POST_RATE_LIMIT_PER_MINUTE: "1000000"
      READ_RATE_LIMIT_PER_MINUTE: "0"
      PUBLIC_READ_RATE_LIMIT_PER_MINUTE: "0"
  jobs:
    # kubectl scale is the operator's tool here; the HPA step turns it on.
    autoscaling:
      enabled: false
workers:
  jobsWorker:
    # A fixed set of pods, so that no step sees another's scaling.
    autoscaling:
      enabled: false
`, env.tag, env.temporal, opSecret, env.tag, keySecret)), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	helm(t, "install", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m")
	t.Logf("helm install --wait: %s", time.Since(start).Round(time.Second))

	// Migrations: the hook Job ran before the Deployments (and is gone on
	// success); every service's schema is at a version.
	for _, schema := range []string{"gateway", "jobs", "directory", "content", "community"} {
		out := run(t, time.Minute, "psql", env.databaseURL, "-Atc",
			fmt.Sprintf("select max(version_id) from %s.goose_db_version", schema))
		if v, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || v < 1 {
			t.Errorf("schema %s not migrated: %q", schema, out)
		}
	}
	// Every workload Ready, nothing restarted.
	for _, p := range pods(t, workloads) {
		if !p.Ready || p.Restarts > 0 {
			t.Errorf("pod %s: ready %v, restarts %d", p.Name, p.Ready, p.Restarts)
		}
	}
	ip := strings.TrimSpace(kubectl(t, "get", "service", release+"-gateway", "-o", "jsonpath={.spec.clusterIP}"))
	c.gateway = "http://" + ip + ":8080"

	// The demo directory (jobs need a confirmed city) and a key, made as
	// NOTES.txt tells an operator: the admin commands inside a pod. The key
	// goes into a Secret for helm test.
	kubectl(t, "exec", "deploy/"+release+"-directory", "--", "/app/directory-seed", "demo")
	out := kubectl(t, "exec", "deploy/"+release+"-gateway", "--", "/app/gateway-keys",
		"create", "-json", "-name", "cluster", "-scopes", "read,jobs:write", "-trusted-importer")
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.Key == "" {
		t.Fatalf("gateway-keys: %q", out)
	}
	c.key = k.Key
	kubectl(t, "create", "secret", "generic", keySecret, "--from-literal=api-key="+c.key)

	logs := helm(t, "test", release, "--logs", "--timeout", "3m")
	if !strings.Contains(logs, `"status":"ok"`) {
		t.Errorf("helm test --logs did not show the health answer:\n%s", logs)
	}
	// The gateway answers from the host through its Service.
	resp, err := http.Get(c.gateway + "/v2")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s/v2: %v %v", c.gateway, err, resp)
	}
	_ = resp.Body.Close()
}

// --- network policies ------------------------------------------------------------

// The chart's NetworkPolicies, enforced by kube-network-policies: a pod that is
// not the gateway reaches no backend's API port, while the admin ports and the
// gateway answer it (so the refusals are the policies, not a broken network).
// Everything else in the scenario runs with the policies enforced.
func (c *cluster) networkPolicies(t *testing.T) {
	kubectl(t, "run", "intruder", "--image=coworkjobs/cluster-tools:"+env.tag, "--image-pull-policy=Never",
		"--restart=Never", "--labels=app=intruder", "--command", "--", "sleep", "600")
	defer func() { _, _ = try(time.Minute, "kubectl", "-n", ns, "delete", "pod", "intruder", "--grace-period=1") }()
	kubectl(t, "wait", "--for=condition=Ready", "pod/intruder", "--timeout=90s")
	probe := func(url string) error {
		_, err := try(30*time.Second, "kubectl", "-n", ns, "exec", "intruder", "--", "curl", "-sS", "-o", "/dev/null", "--max-time", "3", url)
		return err
	}
	for _, url := range []string{"http://" + release + "-jobs:9090/readyz", "http://" + release + "-gateway:8080/v2"} {
		if err := probe(url); err != nil {
			t.Fatalf("control: %s does not answer the pod (%v): the network, not the policies", url, err)
		}
	}
	for _, b := range []string{"jobs", "directory", "content", "community"} {
		if err := probe("http://" + release + "-" + b + ":8080/readyz"); err == nil {
			t.Errorf("%s's API port answered a pod that is not the gateway", b)
		}
	}
}

// --- rolling restart -------------------------------------------------------------

// newLoad is the mixed load of tests/reliability's rollout test, through the
// gateway's Service: half the clients keep their connections, half open one
// per request.
func (c *cluster) newLoad(clients int) *suite.Load {
	return &suite.Load{URL: c.gateway, Key: c.key, Calls: suite.MixedCalls, Clients: clients, Pause: 20 * time.Millisecond}
}

// acknowledged checks that every job whose creation was acknowledged can be
// read back.
func (c *cluster) acknowledged(t *testing.T, ids []int64) {
	t.Helper()
	lost := 0
	for _, id := range ids {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v2/jobs/%d", c.gateway, id), nil)
		req.Header.Set("X-API-Key", c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET job %d: %v", id, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			lost++
			t.Errorf("acknowledged job %d: GET answered %d", id, resp.StatusCode)
		}
	}
	t.Logf("%d acknowledged creates, %d lost", len(ids), lost)
}

func (c *cluster) rollingRestart(t *testing.T) {
	load := c.newLoad(8)
	load.Start()
	time.Sleep(3 * time.Second)
	before := pods(t, workloads)
	start := time.Now()
	// What an operator types: every Deployment at once.
	kubectl(t, "rollout", "restart", "deployment", "-l", workloads)
	for _, d := range strings.Fields(kubectl(t, "get", "deployments", "-l", workloads, "-o", "name")) {
		kubectl(t, "rollout", "status", d, "--timeout", "5m")
	}
	took := time.Since(start)
	time.Sleep(3 * time.Second)
	load.Stop()
	after := pods(t, workloads)
	for _, p := range after {
		for _, b := range before {
			if p.Name == b.Name && !p.Deleting {
				t.Errorf("pod %s was not replaced", p.Name)
			}
		}
	}
	t.Logf("%d pods replaced in %s under %d requests", len(after), took.Round(time.Second), load.Total())
	if load.Total() < 300 {
		t.Fatalf("only %d requests: the load did not run", load.Total())
	}
	if fs := load.Failures(); len(fs) > 0 {
		t.Errorf("%d of %d requests failed during the rollout:\n%s", len(fs), load.Total(), suite.Summary(fs, 30))
	}
	c.acknowledged(t, load.Created())
}

// --- scaling ---------------------------------------------------------------------

// scrape calls each for every line of a pod's admin /metrics.
func scrape(t testing.TB, p pod, each func(line string)) {
	t.Helper()
	resp, err := http.Get("http://" + p.IP + ":9090/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", p.Name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
}

// served reads each jobs pod's count of answered /v2/jobs requests from its
// admin port.
func served(t testing.TB, ps []pod) map[string]float64 {
	t.Helper()
	n := map[string]float64{}
	for _, p := range ps {
		scrape(t, p, func(line string) {
			if !strings.HasPrefix(line, `http_requests_total{`) || !strings.Contains(line, `route="/v2/jobs"`) {
				return
			}
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				n[p.Name] += v
			}
		})
	}
	return n
}

// compareBalance measures the two balance modes in alternating rounds on
// three jobs pods: what `make test-cluster` judges is fairness and zero
// failures (above); this is the throughput and CPU comparison behind the
// chart's default, run by hand with CLUSTER_BALANCE_ROUNDS=N (docs/kubernetes.md).
func (c *cluster) compareBalance(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("CLUSTER_BALANCE_ROUNDS"))
	if rounds < 1 {
		t.Skip("CLUSTER_BALANCE_ROUNDS is not set")
	}
	defer helm(t, "upgrade", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m")
	cpu := func(ps []pod) float64 {
		sum := 0.0
		for _, p := range ps {
			sum += gauge(t, p, "process_cpu_seconds_total")
		}
		return sum
	}
	for i := range 2 * rounds {
		mode := []string{"connection", "dns"}[i%2]
		helm(t, "upgrade", release, env.chart, "-f", c.values, "--set", "config.upstreamBalance="+mode,
			"--set", "apis.jobs.replicaCount=3", "--wait", "--timeout", "5m")
		c.settled(t)
		load := c.readJobs(20)
		load.Start()
		time.Sleep(5 * time.Second)
		gw, jobs := pods(t, "app.kubernetes.io/component=gateway"), pods(t, "app.kubernetes.io/component=jobs")
		n0, g0, j0, s0 := load.Total(), cpu(gw), cpu(jobs), served(t, jobs)
		time.Sleep(20 * time.Second)
		n, g, j, s1 := load.Total()-n0, cpu(gw)-g0, cpu(jobs)-j0, served(t, jobs)
		load.Stop()
		var shares []string
		total := 0.0
		for _, p := range jobs {
			total += s1[p.Name] - s0[p.Name]
		}
		for _, p := range jobs {
			shares = append(shares, fmt.Sprintf("%.2f", (s1[p.Name]-s0[p.Name])/max(total, 1)))
		}
		t.Logf("round %d %-10s %6.0f req/s, gateway CPU %.0f µs/req, jobs CPU %.0f µs/req, shares %s, %d failed",
			i/2+1, mode, float64(n)/20, 1e6*g/float64(max(n, 1)), 1e6*j/float64(max(n, 1)), strings.Join(shares, " / "), len(load.Failures()))
	}
}

// gauge reads one series of a pod's admin /metrics (0 when absent).
func gauge(t testing.TB, p pod, series string) float64 {
	t.Helper()
	v := 0.0
	scrape(t, p, func(line string) {
		if s, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ = strconv.ParseFloat(s, 64)
		}
	})
	return v
}

// readJobs keeps clients keep-alive readers of GET /v2/jobs until stop.
func (c *cluster) readJobs(clients int) *suite.Load {
	return &suite.Load{URL: c.gateway, Key: c.key, Calls: []suite.Call{{Method: "GET", Path: "/v2/jobs?limit=5"}},
		Clients: clients, KeepAlive: true, Pause: 10 * time.Millisecond}
}

// share checks that, over the 20 s after a settling time, every ready jobs
// pod answered at least half its even share of the gateway's /v2/jobs
// requests. With the chart's default (upstreamBalance dns) the gateway picks
// a pod per request; with connection, kube-proxy picks one per connection and
// the gateway closes its pooled ones after UPSTREAM_MAX_CONN_AGE (10 s), so
// 20 s hold two generations of them (~80 connections under this load): a pod
// under half its share is then a 3-sigma event, not chance.
func (c *cluster) share(t *testing.T, want int, settle time.Duration) {
	t.Helper()
	var ready []pod
	eventually(t, 2*time.Minute, fmt.Sprintf("%d jobs pods ready", want), func() (bool, string) {
		ready = ready[:0]
		for _, p := range pods(t, "app.kubernetes.io/component=jobs") {
			if p.Ready && !p.Deleting {
				ready = append(ready, p)
			}
		}
		return len(ready) == want, fmt.Sprintf("%d ready", len(ready))
	})
	atReady := served(t, ready)
	time.Sleep(settle)
	before := served(t, ready)
	time.Sleep(20 * time.Second)
	after := served(t, ready)
	total, early := 0.0, 0.0
	for _, p := range ready {
		total += after[p.Name] - before[p.Name]
		early += before[p.Name] - atReady[p.Name]
	}
	// The settling window is reported, not judged: it shows how soon each
	// balance mode reaches a new pod (docs/kubernetes.md compares them).
	newest := ready[0]
	for _, p := range ready {
		if p.Created > newest.Created {
			newest = p
		}
	}
	var first []string
	for _, p := range ready {
		s := fmt.Sprintf("%.2f", (before[p.Name]-atReady[p.Name])/max(early, 1))
		if p.Name == newest.Name {
			s += " (new)"
		}
		first = append(first, s)
	}
	t.Logf("shares in the first %s after readiness (%.0f requests): %s", settle, early, strings.Join(first, " / "))
	if total < 500 {
		t.Fatalf("only %.0f requests reached the jobs pods", total)
	}
	var shares []string
	for _, p := range ready {
		s := (after[p.Name] - before[p.Name]) / total
		shares = append(shares, fmt.Sprintf("%s %.2f", p.Name, s))
		if p.Name == newest.Name {
			shares[len(shares)-1] += " (new)"
		}
		if s < 0.5/float64(want) {
			t.Errorf("pod %s answered %.1f%% of %.0f requests, under half its share (%.1f%%)", p.Name, 100*s, total, 100/float64(want))
		}
	}
	t.Logf("shares over 20 s after %s (%.0f requests, %.0f/s): %s", settle, total, total/20, strings.Join(shares, ", "))
}

func (c *cluster) scaleOut(t *testing.T) { c.scaleOutThen(t, func() {}) }

// scaleOutThen is scaleOut; scaled runs once the shares are measured, before
// the scale-in.
func (c *cluster) scaleOutThen(t *testing.T, scaled func()) {
	load := c.readJobs(20)
	load.Start()
	defer load.Stop()
	time.Sleep(5 * time.Second) // the gateway's pools are full and warm
	kubectl(t, "scale", "deployment", release+"-jobs", "--replicas=3")
	// Within 30 s of the new pod's readiness: 10 s to settle, 20 measured.
	c.share(t, 3, 10*time.Second)
	scaled()
	if fs := load.Failures(); len(fs) > 0 {
		t.Errorf("%d requests failed while scaling:\n%s", len(fs), suite.Summary(fs, 10))
	}
	kubectl(t, "scale", "deployment", release+"-jobs", "--replicas=2")
}

func (c *cluster) hpaScaleOut(t *testing.T) {
	// The chart's HPA for jobs, with a target this load (a few hundred
	// requests per second on a 2-core machine) exceeds, and room for one
	// more pod, so that the shares are measured on a known set.
	hpa := []string{"--set", "apis.jobs.autoscaling.enabled=true", "--set", "apis.jobs.autoscaling.minReplicas=2",
		"--set", "apis.jobs.autoscaling.maxReplicas=3", "--set", "apis.jobs.autoscaling.targetCPUUtilizationPercentage=20"}
	// metrics-server serves pod metrics through the aggregator; the HPA must
	// start from idle pods (the step before loaded them), or it scales out on
	// the last step's load rather than this one's.
	eventually(t, 3*time.Minute, "idle jobs pods in the metrics API", func() (bool, string) {
		out, err := try(30*time.Second, "kubectl", "-n", ns, "top", "pods", "-l", "app.kubernetes.io/component=jobs", "--no-headers")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != 2 {
			return false, out
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 2 {
				return false, out
			}
			if m, err := strconv.Atoi(strings.TrimSuffix(f[1], "m")); err != nil || m > 10 {
				return false, out
			}
		}
		return true, out
	})
	helm(t, append([]string{"upgrade", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m"}, hpa...)...)
	defer func() {
		// Back to the install's values: a fixed two replicas.
		helm(t, "upgrade", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m")
	}()
	eventually(t, time.Minute, "the HPA reads the idle pods and keeps 2", func() (bool, string) {
		out := kubectl(t, "get", "hpa", release+"-jobs", "-o", "jsonpath={.status.desiredReplicas} {.status.currentMetrics[0].resource.current.averageUtilization}")
		f := strings.Fields(out)
		return len(f) == 2 && f[0] == "2", "desired replicas, CPU %: " + out
	})
	load := c.readJobs(30)
	load.Start()
	defer load.Stop()
	took := eventually(t, 4*time.Minute, "the HPA scales jobs out", func() (bool, string) {
		out := kubectl(t, "get", "hpa", release+"-jobs", "-o", "jsonpath={.status.desiredReplicas} {.status.currentMetrics[0].resource.current.averageUtilization}")
		f := strings.Fields(out)
		return len(f) > 0 && f[0] == "3", "desired replicas, CPU %: " + out
	})
	t.Logf("the HPA asked for 3 replicas %s after the load began", took.Round(time.Second))
	c.share(t, 3, 10*time.Second)
	load.Stop()
	if fs := load.Failures(); len(fs) > 0 {
		t.Errorf("%d requests failed while the HPA scaled:\n%s", len(fs), suite.Summary(fs, 10))
	}
}

// gatewayEndpoints waits until every gateway pod balances jobs over want
// addresses (gateway_upstream_endpoints: the headless Service's answer).
func gatewayEndpoints(t *testing.T, want int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("every gateway balancing jobs over %d addresses", want), func() (bool, string) {
		var seen []string
		for _, p := range pods(t, "app.kubernetes.io/component=gateway") {
			if p.Deleting {
				continue
			}
			v := gauge(t, p, `gateway_upstream_endpoints{backend="jobs"}`)
			seen = append(seen, fmt.Sprintf("%s=%g", p.Name, v))
			if v != float64(want) {
				return false, strings.Join(seen, " ")
			}
		}
		return len(seen) > 0, strings.Join(seen, " ")
	})
}

// connectionBalance runs the rollout and the scale-out again with the
// gateway pooling aged connections to the backends' cluster IPs
// (config.upstreamBalance=connection) instead of balancing each request over
// their headless Services (the chart's default), so both modes are held to
// the same checks in one run.
func (c *cluster) connectionBalance(t *testing.T) {
	helm(t, "upgrade", release, env.chart, "-f", c.values, "--set", "config.upstreamBalance=connection", "--wait", "--timeout", "5m")
	defer func() {
		helm(t, "upgrade", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m")
		c.settled(t)
	}()
	c.settled(t)
	if got := kubectl(t, "get", "deployment", release+"-gateway", "-o",
		`jsonpath={.spec.template.spec.containers[0].env[?(@.name=="UPSTREAM_BALANCE")].value}`); got != "connection" {
		t.Fatalf("the gateway's UPSTREAM_BALANCE is %q after the upgrade", got)
	}
	gatewayEndpoints(t, 1)
	t.Run("rolling restart under load loses nothing", c.rollingRestart)
	t.Run("a scaled-out jobs pod gets its share", c.scaleOut)
}

// --- upgrades ----------------------------------------------------------------------

func (c *cluster) noopUpgrade(t *testing.T) {
	c.settled(t)
	before := podNames(pods(t, workloads))
	helm(t, "upgrade", release, env.chart, "-f", c.values, "--wait", "--timeout", "5m")
	time.Sleep(5 * time.Second)
	after := podNames(pods(t, workloads))
	if strings.Join(before, " ") != strings.Join(after, " ") {
		t.Errorf("a no-op upgrade replaced pods:\nbefore %v\nafter  %v", before, after)
	}
}

// settled waits until no pod of the release is terminating or unready.
func (c *cluster) settled(t *testing.T) {
	t.Helper()
	eventually(t, 3*time.Minute, "every pod ready, none terminating", func() (bool, string) {
		for _, p := range pods(t, workloads) {
			if !p.Ready || p.Deleting {
				return false, p.Name
			}
		}
		return true, ""
	})
}

func (c *cluster) secretChange(t *testing.T) {
	// From the operator's Secret to the chart's own (generated HMAC keys):
	// every pod changes once; then a no-op upgrade must keep them (the
	// generated keys are read back, not drawn again), and a changed SMTP URL
	// replaces exactly the Deployments that read it.
	values := func(smtp string) []string {
		return []string{"-f", c.values, "--set", "secrets.existingSecret=", "--set", "secrets.databaseURL=" + env.databaseURL,
			"--set", "secrets.redisURL=" + env.redisURL, "--set", "secrets.smtpURL=" + smtp, "--wait", "--timeout", "5m"}
	}
	helm(t, append([]string{"upgrade", release, env.chart}, values("smtp://coworkjobs-mailcatcher:1025")...)...)
	c.settled(t)
	before := pods(t, workloads)
	helm(t, append([]string{"upgrade", release, env.chart}, values("smtp://coworkjobs-mailcatcher:1025")...)...)
	c.settled(t)
	if a, b := podNames(pods(t, workloads)), podNames(before); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("a no-op upgrade with generated secrets replaced pods:\nbefore %v\nafter  %v", b, a)
	}
	readers := map[string]bool{}
	var deps struct {
		Items []struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Env []struct {
								Name string `json:"name"`
							} `json:"env"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, "get", "deployments", "-l", workloads, "-o", "json")), &deps); err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		for _, ct := range d.Spec.Template.Spec.Containers {
			for _, e := range ct.Env {
				if e.Name == "SMTP_URL" {
					readers[d.Metadata.Labels["app.kubernetes.io/component"]] = true
				}
			}
		}
	}
	if len(readers) == 0 {
		t.Fatal("no Deployment reads SMTP_URL")
	}
	helm(t, append([]string{"upgrade", release, env.chart}, values("smtp://coworkjobs-mailcatcher:1025/?changed=1")...)...)
	c.settled(t)
	after := pods(t, workloads)
	old := map[string]bool{}
	for _, p := range before {
		old[p.Name] = true
	}
	replaced := map[string]bool{}
	for _, p := range after {
		if !old[p.Name] {
			replaced[p.Component] = true
		}
	}
	if fmt.Sprint(replaced) != fmt.Sprint(readers) {
		t.Errorf("changed SMTP_URL replaced the pods of %v; its readers are %v", replaced, readers)
	}
	t.Logf("changed SMTP_URL replaced exactly %v", replaced)
}

// --- failures ------------------------------------------------------------------------

func (c *cluster) killPod(t *testing.T) {
	c.settled(t)
	load := c.newLoad(8)
	load.Start()
	time.Sleep(3 * time.Second)
	victim := pods(t, "app.kubernetes.io/component=jobs")[0]
	killed := time.Now()
	// SIGKILL to the container's process, as the OOM killer or a crash would.
	run(t, time.Minute, "ctr", "--address", filepath.Join(env.dir, "containerd/containerd.sock"), "-n", "k8s.io",
		"tasks", "kill", "-s", "SIGKILL", victim.ContainerID)
	eventually(t, 2*time.Minute, "the killed pod restarted and ready", func() (bool, string) {
		for _, p := range pods(t, "app.kubernetes.io/component=jobs") {
			if p.Name == victim.Name {
				return p.Ready && p.Restarts > victim.Restarts, fmt.Sprintf("ready %v restarts %d", p.Ready, p.Restarts)
			}
		}
		return false, "gone"
	})
	time.Sleep(3 * time.Second)
	load.Stop()
	fs := load.Failures()
	var last time.Duration
	for _, f := range fs {
		if f.Status != http.StatusServiceUnavailable {
			t.Errorf("a failure other than 503 (the gateway must answer for a dead backend): %s", f)
		}
		last = max(last, f.At.Sub(killed))
	}
	// Kubernetes needs the readiness period × threshold (5 s × 2) to take
	// the pod out of the Service; the gateway's retries cover reads meanwhile.
	if last > 15*time.Second {
		t.Errorf("503s until %s after the kill; want them to end once Kubernetes has noticed (≤ 15 s)", last.Round(time.Millisecond))
	}
	t.Logf("killed %s: %d of %d requests failed (all 503), the last %s after the kill", victim.Name, len(fs), load.Total(), last.Round(time.Millisecond))
	c.acknowledged(t, load.Created())
}

func (c *cluster) temporalCut(t *testing.T) {
	c.settled(t)
	workers := "app.kubernetes.io/component in (jobs-worker,community-worker)"
	run(t, time.Minute, "bash", env.script, "temporal-forward", "off")
	restored := false
	defer func() {
		if !restored {
			_, _ = try(time.Minute, "bash", env.script, "temporal-forward", "on")
		}
	}()
	took := eventually(t, 2*time.Minute, "workers not ready without Temporal", func() (bool, string) {
		ps := pods(t, workers)
		for _, p := range ps {
			if p.Ready {
				return false, p.Name + " still ready"
			}
		}
		return len(ps) >= 2, fmt.Sprintf("%d workers", len(ps))
	})
	t.Logf("workers not ready %s after Temporal went away", took.Round(time.Second))
	// The APIs do not need Temporal: they stay ready.
	for _, p := range pods(t, "app.kubernetes.io/component in (gateway,jobs,directory,content,community)") {
		if !p.Ready {
			t.Errorf("%s not ready without Temporal", p.Name)
		}
	}
	run(t, time.Minute, "bash", env.script, "temporal-forward", "on")
	restored = true
	took = eventually(t, 3*time.Minute, "workers ready again", func() (bool, string) {
		for _, p := range pods(t, workers) {
			if !p.Ready || p.Restarts > 0 {
				return false, fmt.Sprintf("%s ready %v restarts %d", p.Name, p.Ready, p.Restarts)
			}
		}
		return true, ""
	})
	t.Logf("workers ready again %s after Temporal came back, without a restart", took.Round(time.Second))
}

// --- uninstall -------------------------------------------------------------------------

func (c *cluster) uninstall(t *testing.T) {
	helm(t, "uninstall", release, "--wait", "--timeout", "5m")
	kubectl(t, "delete", "secret", opSecret, keySecret)
	kinds := strings.Join(strings.Fields(run(t, time.Minute, "kubectl", "api-resources", "--verbs=list", "--namespaced", "-o", "name")), ",")
	eventually(t, 2*time.Minute, "nothing left in the namespace", func() (bool, string) {
		out := kubectl(t, "get", kinds, "--ignore-not-found", "-o", "name")
		var left []string
		for _, l := range strings.Fields(out) {
			// Kubernetes' own: the namespace's default ServiceAccount and CA.
			if l == "serviceaccount/default" || l == "configmap/kube-root-ca.crt" || strings.HasPrefix(l, "event") {
				continue
			}
			left = append(left, l)
		}
		return len(left) == 0, strings.Join(left, " ")
	})
	run(t, 5*time.Minute, "kubectl", "delete", "namespace", ns, "--wait")
}
