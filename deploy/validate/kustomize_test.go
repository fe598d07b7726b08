package validate

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// build is `kustomize build` through kustomize's Go API, each resource then
// decoded strictly.
func build(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions()) // root-only loading, as kubectl and Tilt do
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []object
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		o, err := decodeStrict(fmt.Sprintf("%s:%s/%s", dir, r.GetKind(), r.GetName()), y)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	return objs
}

func kustomizations(t *testing.T) []string {
	root := repoRoot(t)
	return []string{filepath.Join(root, "k8s", "base"), filepath.Join(root, "k8s", "overlays", "dev")}
}

func TestKustomizeBuildsStrictlyTyped(t *testing.T) {
	for _, dir := range kustomizations(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := build(t, dir)
			checkDeps(t, objs)
		})
	}
}

// checkDeps: every dependency the suite needs is there, under the names the
// chart's development values point at, and every reference resolves.
func checkDeps(t *testing.T, objs []object) {
	t.Helper()
	deps := map[string]*appsv1.Deployment{}
	for _, d := range find[*appsv1.Deployment](objs) {
		deps[d.Name] = d
		if d.Namespace != "coworkjobs" {
			t.Errorf("Deployment %s in namespace %q", d.Name, d.Namespace)
		}
	}
	services := map[string]*corev1.Service{}
	for _, s := range find[*corev1.Service](objs) {
		services[s.Name] = s
	}
	want := map[string][]int32{
		"postgres": {5432}, "redis": {6379}, "temporal": {7233, 8233}, "jaeger": {16686, 4317},
		"otel-collector": {4317, 4318}, "prometheus": {9090}, "grafana": {3000},
	}
	for name, ports := range want {
		d, s := deps[name], services[name]
		if d == nil || s == nil {
			t.Errorf("%s: Deployment %v, Service %v", name, d != nil, s != nil)
			continue
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Service %s does not select its pods", name)
		}
		var got []int32
		for _, p := range s.Spec.Ports {
			got = append(got, p.Port)
			if !containerPortNamed(d, p.TargetPort) {
				t.Errorf("Service %s targets %s, not a port of its container", name, p.TargetPort.String())
			}
		}
		if !slices.Equal(got, ports) {
			t.Errorf("Service %s ports %v, want %v", name, got, ports)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Resources.Limits.Memory().IsZero() || c.ReadinessProbe == nil || c.Image == "" || strings.HasSuffix(c.Image, ":latest") {
				t.Errorf("%s/%s: needs a memory limit, a readiness probe and a pinned image", name, c.Name)
			}
		}
	}
	// Volumes name ConfigMaps/PVCs that exist (kustomize renamed the generated ones).
	cms := map[string]bool{}
	for _, c := range find[*corev1.ConfigMap](objs) {
		cms[c.Name] = true
	}
	pvcs := map[string]bool{}
	for _, p := range find[*corev1.PersistentVolumeClaim](objs) {
		pvcs[p.Name] = true
	}
	for name, d := range deps {
		for _, v := range d.Spec.Template.Spec.Volumes {
			switch {
			case v.ConfigMap != nil && !cms[v.ConfigMap.Name] && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional):
				t.Errorf("%s: ConfigMap %s is not built", name, v.ConfigMap.Name)
			case v.PersistentVolumeClaim != nil && !pvcs[v.PersistentVolumeClaim.ClaimName]:
				t.Errorf("%s: PVC %s is not built", name, v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	// The chart's development values reach these services.
	vals := readValues(t, filepath.Join(repoRoot(t), "tilt", "values-dev.yaml"))
	secrets, _ := vals["secrets"].(map[string]any)
	config, _ := vals["config"].(map[string]any)
	temporal, _ := config["temporal"].(map[string]any)
	for key, raw := range map[string]any{
		"secrets.databaseURL": secrets["databaseURL"], "secrets.redisURL": secrets["redisURL"],
		"config.otlpEndpoint": config["otlpEndpoint"], "config.temporal.address": "tcp://" + fmt.Sprint(temporal["address"]),
	} {
		s, _ := raw.(string)
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			t.Errorf("tilt/values-dev.yaml %s = %q: not a URL", key, s)
			continue
		}
		svc, ok := services[u.Hostname()]
		if !ok {
			t.Errorf("tilt/values-dev.yaml %s points at %s, not a Service of k8s/", key, u.Hostname())
			continue
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == u.Port() }) {
			t.Errorf("tilt/values-dev.yaml %s: Service %s has no port %s", key, svc.Name, u.Port())
		}
	}
}

func containerPortNamed(d *appsv1.Deployment, p intstr.IntOrString) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return true
			}
		}
	}
	return false
}
