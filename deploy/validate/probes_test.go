package validate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// portOf resolves a probe's named port to the container's port number.
func portOf(c corev1.Container, p *corev1.Probe) (int32, string) {
	if p == nil || p.HTTPGet == nil {
		return 0, ""
	}
	if n := p.HTTPGet.Port.IntValue(); n != 0 {
		return int32(n), p.HTTPGet.Path
	}
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.String() {
			return cp.ContainerPort, p.HTTPGet.Path
		}
	}
	return -1, p.HTTPGet.Path
}

func configMapData(t *testing.T, r rendered) map[string]string {
	t.Helper()
	for _, c := range find[*corev1.ConfigMap](r.objs) {
		if _, ok := c.Data["ADMIN_ADDR"]; ok { // the one every container reads
			return c.Data
		}
	}
	t.Fatal("no ConfigMap")
	return nil
}

// addrPort is the port of a listen address such as ":9090".
func addrPort(t *testing.T, addr string) int32 {
	t.Helper()
	var p int32
	if _, err := fmt.Sscanf(addr[strings.LastIndexByte(addr, ':')+1:], "%d", &p); err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	return p
}

// Liveness of every Deployment goes to the admin port's /livez (ADMIN_ADDR),
// never to the API port behind its connection cap; readiness of an API to
// the API port's /readyz (HTTP_ADDR), of a worker to the admin port's.
func TestChartProbes(t *testing.T) {
	r := render(t, "")
	cm := configMapData(t, r)
	admin, api := addrPort(t, cm["ADMIN_ADDR"]), addrPort(t, cm["HTTP_ADDR"])
	if admin == api {
		t.Fatalf("ADMIN_ADDR and HTTP_ADDR share port %d", admin)
	}
	deps := deployments(r.objs)
	for comp, d := range deps {
		c := d.Spec.Template.Spec.Containers[0]
		_, isWorker := workers[comp]
		if port, path := portOf(c, c.LivenessProbe); port != admin || path != "/livez" {
			t.Errorf("%s: liveness on %d%s, want the admin port %d /livez", comp, port, path, admin)
		}
		if c.StartupProbe != nil {
			if port, path := portOf(c, c.StartupProbe); port != admin || path != "/livez" {
				t.Errorf("%s: startup probe on %d%s, want the admin port %d /livez", comp, port, path, admin)
			}
		} else if !isWorker {
			t.Errorf("%s: no startup probe (migrations at start would trip liveness)", comp)
		}
		want := api
		if isWorker {
			want = admin
		}
		if port, path := portOf(c, c.ReadinessProbe); port != want || path != "/readyz" {
			t.Errorf("%s: readiness on %d%s, want %d /readyz", comp, port, path, want)
		}
	}
	for _, a := range apis {
		if deps[a] == nil {
			t.Errorf("no Deployment for %s", a)
		}
	}
}

func envOf(d *appsv1.Deployment) map[string]corev1.EnvVar {
	return envByName(d.Spec.Template.Spec.Containers[0])
}

// On SIGTERM an API is not ready at once, serves for SHUTDOWN_DRAIN_DELAY,
// then drains within SHUTDOWN_TIMEOUT: the grace period covers both.
func TestChartShutdown(t *testing.T) {
	check := func(t *testing.T, r rendered, drain, timeout string, grace int64) {
		t.Helper()
		if got := configMapData(t, r)["SHUTDOWN_TIMEOUT"]; got != timeout {
			t.Errorf("SHUTDOWN_TIMEOUT %q, want %q", got, timeout)
		}
		for comp, d := range deployments(r.objs) {
			_, isWorker := workers[comp]
			e, ok := envOf(d)["SHUTDOWN_DRAIN_DELAY"]
			if isWorker && ok {
				t.Errorf("%s: a worker takes no traffic, yet has a drain delay", comp)
			}
			if !isWorker && e.Value != drain {
				t.Errorf("%s: SHUTDOWN_DRAIN_DELAY %q, want %q", comp, e.Value, drain)
			}
			if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != grace {
				t.Errorf("%s: terminationGracePeriodSeconds %v, want %d", comp, g, grace)
			}
		}
	}
	t.Run("defaults", func(t *testing.T) { check(t, render(t, ""), "5s", "20s", 30) })
	t.Run("computed", func(t *testing.T) {
		r := renderValues(t, "longer", map[string]any{"shutdown": map[string]any{"drainDelay": "15s", "timeout": "1m0s"}})
		check(t, r, "15s", "1m0s", 80)
		r = renderValues(t, "ms", map[string]any{"shutdown": map[string]any{"drainDelay": "2500ms", "timeout": "20s"}})
		check(t, r, "2500ms", "20s", 28) // 22.5 s rounded up, + 5
	})
	t.Run("ownValueAboveTheMinimum", func(t *testing.T) {
		check(t, renderValues(t, "grace 120", map[string]any{"terminationGracePeriodSeconds": 120}), "5s", "20s", 120)
	})
	t.Run("ownValueTooShortFails", func(t *testing.T) {
		_, err := renderChart(t, map[string]any{"terminationGracePeriodSeconds": 25}, nil)
		if err == nil || !strings.Contains(err.Error(), "need 30") {
			t.Errorf("a grace period shorter than drain + timeout: %v, want a render error", err)
		}
	})
	t.Run("envCannotBypassTheComputation", func(t *testing.T) {
		for what, vals := range map[string]map[string]any{
			"component env":   {"apis": map[string]any{"gateway": map[string]any{"env": map[string]any{"SHUTDOWN_TIMEOUT": "90s"}}}},
			"config.extraEnv": {"config": map[string]any{"extraEnv": map[string]any{"SHUTDOWN_DRAIN_DELAY": "30s"}}},
			"global extraEnv": {"extraEnv": []any{map[string]any{"name": "SHUTDOWN_TIMEOUT", "value": "90s"}}},
			"worker extraEnv": {"workers": map[string]any{"jobsWorker": map[string]any{"extraEnv": []any{map[string]any{"name": "ADMIN_ADDR", "value": ":7000"}}}}},
		} {
			if _, err := renderChart(t, vals, nil); err == nil || !strings.Contains(err.Error(), "is set by the chart") {
				t.Errorf("%s: %v, want a render error", what, err)
			}
		}
	})
}

// pprof is off unless an operator sets PPROF_ADDR, and the chart never opens
// a port for it: containers, Services and NetworkPolicies know only the API
// port and the admin port.
func TestChartPprofNeverExposed(t *testing.T) {
	for _, file := range valuesFiles(t) {
		t.Run(file[strings.LastIndexByte(file, '/')+1:], func(t *testing.T) {
			r := render(t, file)
			for k, v := range configMapData(t, r) {
				if k == "PPROF_ADDR" || strings.Contains(v, "pprof") {
					t.Errorf("ConfigMap %s=%s", k, v)
				}
			}
			for key, spec := range podSpecs(r.objs) {
				for _, c := range allContainers(spec) {
					if _, ok := envByName(c)["PPROF_ADDR"]; ok {
						t.Errorf("%s/%s sets PPROF_ADDR", key, c.Name)
					}
					for _, p := range c.Ports {
						if !slices.Contains([]string{"http", "metrics", "smtp"}, p.Name) || (p.Name == "metrics" && p.ContainerPort != 9090) {
							t.Errorf("%s/%s: port %s %d", key, c.Name, p.Name, p.ContainerPort)
						}
					}
				}
			}
			for _, s := range find[*corev1.Service](r.objs) {
				for _, p := range s.Spec.Ports {
					if !slices.Contains([]string{"http", "metrics", "smtp"}, p.Name) {
						t.Errorf("Service %s exposes port %s (%d)", s.Name, p.Name, p.Port)
					}
				}
			}
			for _, np := range find[*networkingv1.NetworkPolicy](r.objs) {
				for _, rule := range np.Spec.Ingress {
					for _, p := range rule.Ports {
						if p.Port == nil || !slices.Contains([]string{"http", "metrics"}, p.Port.String()) {
							t.Errorf("NetworkPolicy %s admits port %v", np.Name, p.Port)
						}
					}
				}
			}
		})
	}
}
