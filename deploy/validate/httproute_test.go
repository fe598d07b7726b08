package validate

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// ci/httproute-values.yaml puts the gateway behind a Gateway API HTTPRoute:
// one route, attached to the Gateway given, for the hosts given, to the
// gateway's Service and API port only.
func TestChartHTTPRoute(t *testing.T) {
	r := render(t, filepath.Join(chartDir(t), "ci", "httproute-values.yaml"))
	routes := find[*httpRoute](r.objs)
	if len(routes) != 1 {
		t.Fatalf("%d HTTPRoutes, want 1", len(routes))
	}
	if n := len(find[*networkingv1.Ingress](r.objs)); n != 0 {
		t.Errorf("%d Ingresses beside the route (ingress.enabled=false)", n)
	}
	rt := routes[0]
	if rt.Labels["gateway-class"] != "public" || rt.Annotations["example.com/owner"] != "platform" || rt.Labels["app.kubernetes.io/component"] != "gateway" {
		t.Errorf("route metadata %v %v", rt.Labels, rt.Annotations)
	}
	p := rt.Spec.ParentRefs
	if len(p) != 1 || p[0].Name != "public" || p[0].Namespace == nil || *p[0].Namespace != "gateway-system" || p[0].SectionName == nil || *p[0].SectionName != "https" {
		t.Errorf("parentRefs %+v", p)
	}
	if strings.Join(rt.Spec.Hostnames, ",") != "api.coworkjobs.example" {
		t.Errorf("hostnames %v", rt.Spec.Hostnames)
	}
	if len(rt.Spec.Rules) != 1 {
		t.Fatalf("%d rules", len(rt.Spec.Rules))
	}
	rule := rt.Spec.Rules[0]
	if len(rule.Matches) != 1 || rule.Matches[0].Path == nil || rule.Matches[0].Path.Type != "PathPrefix" || rule.Matches[0].Path.Value != "/v2" {
		t.Errorf("matches %+v, want the default PathPrefix /v2", rule.Matches)
	}
	if len(rule.Filters) != 1 || rule.Filters[0]["type"] != "ResponseHeaderModifier" || rule.Timeouts == nil || *rule.Timeouts.Request != "10s" {
		t.Errorf("filters %v timeouts %+v", rule.Filters, rule.Timeouts)
	}
	var gw *corev1.Service
	for _, s := range find[*corev1.Service](r.objs) {
		if s.Name == name("gateway") {
			gw = s
		}
	}
	if len(rule.BackendRefs) != 1 || gw == nil {
		t.Fatalf("backendRefs %+v (gateway Service %v)", rule.BackendRefs, gw != nil)
	}
	b := rule.BackendRefs[0]
	if b.Name != gw.Name || b.Port == nil || (b.Kind != nil && *b.Kind != "Service") {
		t.Fatalf("backendRef %+v, want the gateway Service", b)
	}
	api := false
	for _, sp := range gw.Spec.Ports {
		api = api || (sp.Port == *b.Port && sp.Name == "http")
	}
	if !api {
		t.Errorf("the route sends to port %d, not the gateway Service's API port", *b.Port)
	}
	if !strings.Contains(r.notes, "HTTPRoute "+name("gateway")) {
		t.Errorf("NOTES.txt does not mention the route:\n%s", r.notes)
	}

	if _, err := renderChart(t, map[string]any{"httpRoute": map[string]any{"enabled": true}}, nil); err == nil || !strings.Contains(err.Error(), "httpRoute.parentRefs") {
		t.Errorf("a route without parentRefs: %v, want a render error", err)
	}
	if n := len(find[*httpRoute](render(t, "").objs)); n != 0 {
		t.Errorf("%d HTTPRoutes by default", n)
	}
}
