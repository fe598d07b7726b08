package tests

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// dependencyUp waits for the gateway's first background check and returns
// gateway_dependency_up by dependency.
func dependencyUp(t *testing.T, g *gateway) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mfs, err := g.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "gateway_dependency_up" {
				for _, m := range mf.GetMetric() {
					got[label(m, "dependency")] = m.GetGauge().GetValue()
				}
			}
		}
		if len(got) == 5 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// gateway_dependency_up says what the background check reaches: the
// RedisDown alert and dashboards read it.
func TestDependencyUpGauge(t *testing.T) {
	up := dependencyUp(t, startGateway(t, gatewayOpts{}))
	for _, dep := range []string{"redis", "jobs", "directory", "content", "community"} {
		if up[dep] != 1 {
			t.Fatalf("healthy gateway: %s = %v (%v)", dep, up[dep], up)
		}
	}
	down := dependencyUp(t, startGateway(t, gatewayOpts{redisURL: "redis://127.0.0.1:1/0", backendURL: "http://127.0.0.1:1"}))
	if len(down) != 5 {
		t.Fatalf("gauges %v", down)
	}
	for dep, v := range down {
		if v != 0 {
			t.Fatalf("nothing reachable, yet %s = %v", dep, v)
		}
	}
}
