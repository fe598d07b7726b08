package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	release   = "cj"
	namespace = "coworkjobs"
)

var (
	apis     = []string{"gateway", "jobs", "directory", "content", "community"}
	backends = []string{"jobs", "directory", "content", "community"}
	workers  = map[string]string{"jobs-worker": "jobs", "community-worker": "community"}
)

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "coworkjobs") }

// valuesFiles is every file the chart is checked with: "" (the defaults),
// each ci/*-values.yaml and the Tilt development values.
func valuesFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml (%v)", err)
	}
	all := append([]string{""}, files...)
	return append(all, filepath.Join(repoRoot(t), "tilt", "values-dev.yaml"))
}

func readValues(t testing.TB, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v.AsMap()
}

type rendered struct {
	objs  []object
	notes string
}

// render is `helm template` through the SDK: values merged over the chart's
// defaults, checked against values.schema.json, every template rendered.
func render(t testing.TB, file string) rendered {
	t.Helper()
	return renderValues(t, file, readValues(t, file))
}

// renderValues renders with values given inline (what names them in errors).
func renderValues(t testing.TB, what string, values map[string]any) rendered {
	t.Helper()
	out, err := renderChart(t, values, nil)
	if err != nil {
		t.Fatalf("render with %s: %v", what, err)
	}
	return decodeRendered(t, out)
}

// renderChart runs Helm's engine; with a client provider, lookup sees what it
// serves (as during `helm install/upgrade`), without one it finds nothing (as
// `helm template` and Argo CD).
func renderChart(t testing.TB, values map[string]any, cp engine.ClientProvider) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if cp != nil {
		return engine.RenderWithClientProvider(ch, vals, cp)
	}
	return engine.Render(ch, vals)
}

func decodeRendered(t testing.TB, out map[string]string) rendered {
	t.Helper()
	var r rendered
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			r.notes = out[name]
			continue
		case strings.HasPrefix(filepath.Base(name), "_"):
			continue
		}
		for i, doc := range splitDocs(out[name]) {
			o, err := decodeStrict(fmt.Sprintf("%s#%d", name, i), doc)
			if err != nil {
				t.Fatal(err)
			}
			r.objs = append(r.objs, o)
		}
	}
	return r
}

func TestChartLintStrict(t *testing.T) {
	for _, file := range valuesFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			linter := lint.All(chartDir(t), readValues(t, file), namespace, true)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev { // --strict fails on warnings too
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

func TestChartRendersStrictlyTyped(t *testing.T) {
	for _, file := range valuesFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := render(t, file)
			if len(r.objs) == 0 {
				t.Fatal("nothing rendered")
			}
			if !strings.Contains(r.notes, "helm test "+release) {
				t.Errorf("NOTES.txt does not say how to test the release:\n%s", r.notes)
			}
			seen := map[string]string{}
			for _, o := range r.objs {
				key := o.Kind + "/" + o.Name
				if prev, dup := seen[key]; dup {
					t.Errorf("%s rendered twice (%s, %s)", key, prev, o.Source)
				}
				seen[key] = o.Source
			}
			checkReferences(t, r.objs)
			checkSelectorsStable(t, r.objs)
		})
	}
}

func deployments(objs []object) map[string]*appsv1.Deployment {
	m := map[string]*appsv1.Deployment{}
	for _, d := range find[*appsv1.Deployment](objs) {
		m[strings.TrimPrefix(d.Name, release+"-coworkjobs-")] = d
	}
	return m
}

func name(component string) string { return release + "-coworkjobs-" + component }

// checkReferences: every selector finds its pods, every HPA its Deployment,
// every secretKeyRef and configMapRef an object that holds the key.
func checkReferences(t *testing.T, objs []object) {
	t.Helper()
	deps := find[*appsv1.Deployment](objs)
	podLabels := func(sel map[string]string) int {
		n := 0
		for _, d := range deps {
			if labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
				n++
			}
		}
		return n
	}
	for _, d := range deps {
		s, err := metav1LabelSelector(d.Spec.Selector)
		if err != nil || !s.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector does not match its pod labels", d.Name)
		}
		if podLabels(d.Spec.Selector.MatchLabels) != 1 {
			t.Errorf("Deployment %s: its selector matches other Deployments' pods too", d.Name)
		}
	}
	for _, s := range find[*corev1.Service](objs) {
		if podLabels(s.Spec.Selector) != 1 {
			t.Errorf("Service %s selects %d Deployments, want 1", s.Name, podLabels(s.Spec.Selector))
		}
	}
	for _, p := range find[*policyv1.PodDisruptionBudget](objs) {
		if podLabels(p.Spec.Selector.MatchLabels) != 1 {
			t.Errorf("PDB %s selects %d Deployments, want 1", p.Name, podLabels(p.Spec.Selector.MatchLabels))
		}
	}
	byName := map[string]*appsv1.Deployment{}
	for _, d := range deps {
		byName[d.Name] = d
	}
	for _, h := range find[*autoscalingv2.HorizontalPodAutoscaler](objs) {
		d, ok := byName[h.Spec.ScaleTargetRef.Name]
		if !ok || h.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("HPA %s targets %v, not a rendered Deployment", h.Name, h.Spec.ScaleTargetRef)
			continue
		}
		if d.Spec.Replicas != nil {
			t.Errorf("Deployment %s sets replicas while an HPA scales it (upgrades would fight the HPA)", d.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HPA %s: bad bounds", h.Name)
		}
	}
	secrets := map[string]*corev1.Secret{}
	for _, s := range find[*corev1.Secret](objs) {
		secrets[s.Name] = s
	}
	configMaps := map[string]bool{}
	for _, c := range find[*corev1.ConfigMap](objs) {
		configMaps[c.Name] = true
	}
	for key, spec := range podSpecs(objs) {
		for _, c := range allContainers(spec) {
			for _, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				s, ok := secrets[ref.Name]
				if !ok {
					if !strings.HasPrefix(ref.Name, release) {
						continue // the operator's own Secret (secrets.existingSecret, tests.apiKeySecret)
					}
					t.Errorf("%s/%s: %s reads Secret %s, which is not rendered", key, c.Name, e.Name, ref.Name)
					continue
				}
				if _, ok := s.Data[ref.Key]; !ok {
					t.Errorf("%s/%s: Secret %s has no key %s", key, c.Name, ref.Name, ref.Key)
				}
			}
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil && !configMaps[ef.ConfigMapRef.Name] {
					t.Errorf("%s/%s: ConfigMap %s is not rendered", key, c.Name, ef.ConfigMapRef.Name)
				}
			}
		}
	}
}

func allContainers(spec *corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// checkSelectorsStable: selectors are immutable, so they never carry the chart
// or app version (an upgrade would fail to apply).
func checkSelectorsStable(t *testing.T, objs []object) {
	t.Helper()
	bad := func(where string, sel map[string]string) {
		for _, k := range []string{"helm.sh/chart", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"} {
			if _, ok := sel[k]; ok {
				t.Errorf("%s: selector has %s", where, k)
			}
		}
	}
	for _, o := range objs {
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			bad("Deployment "+v.Name, v.Spec.Selector.MatchLabels)
		case *corev1.Service:
			bad("Service "+v.Name, v.Spec.Selector)
		case *policyv1.PodDisruptionBudget:
			bad("PDB "+v.Name, v.Spec.Selector.MatchLabels)
		case *networkingv1.NetworkPolicy:
			bad("NetworkPolicy "+v.Name, v.Spec.PodSelector.MatchLabels)
		}
	}
}

func TestChartDefaults(t *testing.T) {
	r := render(t, "")
	deps := deployments(r.objs)

	t.Run("oneDeploymentPerAPIAndWorker", func(t *testing.T) {
		var want []string
		want = append(want, apis...)
		for w := range workers {
			want = append(want, w)
		}
		for _, c := range want {
			if deps[c] == nil {
				t.Errorf("no Deployment for %s", c)
			}
		}
		if len(deps) != len(want) {
			t.Errorf("%d Deployments, want %d (mailcatcher is off by default)", len(deps), len(want))
		}
		services := map[string]bool{}
		for _, s := range find[*corev1.Service](r.objs) {
			services[s.Name] = true
		}
		for _, a := range apis {
			if !services[name(a)] {
				t.Errorf("no Service for %s", a)
			}
		}
		for w := range workers {
			if !services[name(w)] {
				t.Errorf("no Service (metrics) for %s", w)
			}
		}
	})

	t.Run("jobsAPIAndWorkerAutoscaled", func(t *testing.T) {
		targets := map[string]bool{}
		for _, h := range find[*autoscalingv2.HorizontalPodAutoscaler](r.objs) {
			targets[h.Spec.ScaleTargetRef.Name] = true
			if len(h.Spec.Metrics) == 0 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
				t.Errorf("HPA %s does not scale on CPU", h.Name)
			}
		}
		for _, c := range []string{"jobs", "jobs-worker"} {
			if !targets[name(c)] {
				t.Errorf("no HPA for %s", c)
			}
		}
		if targets[name("gateway")] {
			t.Error("the gateway HPA is optional and off by default")
		}
	})

	t.Run("podDisruptionBudgets", func(t *testing.T) {
		if n := len(find[*policyv1.PodDisruptionBudget](r.objs)); n != len(deps) {
			t.Errorf("%d PDBs for %d Deployments", n, len(deps))
		}
	})

	t.Run("imagesAndCommands", func(t *testing.T) {
		for comp, d := range deps {
			c := d.Spec.Template.Spec.Containers[0]
			svc := comp
			if s, ok := workers[comp]; ok {
				svc = s
			}
			if want := "coworkjobs/" + svc + ":2.0.0"; c.Image != want {
				t.Errorf("%s: image %s, want %s", comp, c.Image, want)
			}
			if want := []string{"/app/" + comp}; !slices.Equal(c.Command, want) {
				t.Errorf("%s: command %v, want %v", comp, c.Command, want)
			}
		}
	})

	t.Run("goRuntimeFromResources", func(t *testing.T) {
		for comp, d := range deps {
			c := d.Spec.Template.Spec.Containers[0]
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			mp := env["GOMAXPROCS"]
			if mp.ValueFrom == nil || mp.ValueFrom.ResourceFieldRef == nil || mp.ValueFrom.ResourceFieldRef.Resource != "limits.cpu" {
				t.Errorf("%s: GOMAXPROCS not from limits.cpu: %+v", comp, mp)
			}
			ml, ok := env["GOMEMLIMIT"]
			if !ok {
				t.Errorf("%s: no GOMEMLIMIT", comp)
				continue
			}
			lim := c.Resources.Limits.Memory()
			if lim.IsZero() {
				t.Errorf("%s: no memory limit", comp)
				continue
			}
			// 90% of the limit, in MiB.
			if want := fmt.Sprintf("%dMiB", lim.Value()/(1<<20)*9/10); ml.Value != want {
				t.Errorf("%s: GOMEMLIMIT %q, want %q (90%% of %s)", comp, ml.Value, want, lim.String())
			}
		}
	})

	t.Run("networkPolicyAdmitsOnlyTheGateway", func(t *testing.T) {
		pols := map[string]*networkingv1.NetworkPolicy{}
		for _, p := range find[*networkingv1.NetworkPolicy](r.objs) {
			pols[p.Name] = p
		}
		for _, b := range backends {
			p := pols[name(b)]
			if p == nil {
				t.Errorf("no NetworkPolicy for %s", b)
				continue
			}
			sel, _ := metav1LabelSelector(&p.Spec.PodSelector)
			if !sel.Matches(labels.Set(deps[b].Spec.Template.Labels)) {
				t.Errorf("NetworkPolicy %s does not select the %s pods", p.Name, b)
			}
			for other, d := range deps {
				if other != b && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					t.Errorf("NetworkPolicy %s also selects %s", p.Name, other)
				}
			}
			if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				t.Errorf("%s: not an ingress policy", p.Name)
			}
			var httpPeers []networkingv1.NetworkPolicyPeer
			for _, rule := range p.Spec.Ingress {
				for _, port := range rule.Ports {
					if port.Port != nil && port.Port.String() == "http" {
						if len(rule.From) == 0 {
							t.Errorf("%s: the API port is open to everyone", p.Name)
						}
						httpPeers = append(httpPeers, rule.From...)
					} else if port.Port == nil || port.Port.String() != "metrics" {
						t.Errorf("%s: unexpected port %v", p.Name, port.Port)
					}
				}
			}
			admitted := map[string]bool{}
			for _, peer := range httpPeers {
				if peer.PodSelector == nil || peer.NamespaceSelector != nil || peer.IPBlock != nil {
					t.Errorf("%s: API port admits %+v, not only pods of this release", p.Name, peer)
					continue
				}
				ps, _ := metav1LabelSelector(peer.PodSelector)
				matched := 0
				for comp, d := range deps {
					if ps.Matches(labels.Set(d.Spec.Template.Labels)) {
						admitted[comp] = true
						matched++
					}
				}
				if matched == 0 {
					t.Errorf("%s: a peer selects no pod", p.Name)
				}
			}
			want := map[string]bool{"gateway": true}
			if b == "directory" {
				want["jobs"] = true        // city and space look-ups
				want["jobs-worker"] = true // imported jobs' cities and spaces
			}
			if fmt.Sprint(admitted) != fmt.Sprint(want) {
				t.Errorf("%s: API port admits %v, want %v", p.Name, admitted, want)
			}
		}
		for w := range workers {
			p := pols[name(w)]
			if p == nil {
				t.Errorf("no NetworkPolicy for worker %s", w)
				continue
			}
			for _, rule := range p.Spec.Ingress {
				for _, port := range rule.Ports {
					if port.Port == nil || port.Port.String() != "metrics" {
						t.Errorf("worker %s admits traffic on %v, want only scrapes", w, port.Port)
					}
				}
			}
		}
		if pols[name("gateway")] == nil {
			t.Error("no NetworkPolicy for the gateway")
		}
	})

	t.Run("migrationsHook", func(t *testing.T) {
		jobs := find[*batchv1.Job](r.objs)
		if len(jobs) != 1 {
			t.Fatalf("%d Jobs, want the migrations Job", len(jobs))
		}
		j := jobs[0]
		hooks := strings.Split(j.Annotations["helm.sh/hook"], ",")
		if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
			t.Errorf("migrations Job hooks %v, want pre-install and pre-upgrade", hooks)
		}
		if !strings.Contains(j.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation") {
			t.Error("a re-run would collide with the previous Job: no before-hook-creation")
		}
		if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || j.Spec.BackoffLimit == nil {
			t.Error("migrations Job: want restartPolicy Never and a backoffLimit")
		}
		migrated := map[string]bool{}
		for _, c := range j.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "MIGRATE_ONLY" && e.Value == "true" && c.Image == "coworkjobs/"+c.Name+":2.0.0" && slices.Equal(c.Command, []string{"/app/" + c.Name}) {
					migrated[c.Name] = true
				}
			}
		}
		for _, a := range apis {
			if !migrated[a] {
				t.Errorf("the migrations Job does not migrate %s (MIGRATE_ONLY=true with its image)", a)
			}
		}
		// The Job's Secret must exist before the Job: a hook with a lower weight.
		for _, s := range find[*corev1.Secret](r.objs) {
			if s.Name == name("migrations") {
				if s.Annotations["helm.sh/hook"] != j.Annotations["helm.sh/hook"] || s.Annotations["helm.sh/hook-weight"] >= j.Annotations["helm.sh/hook-weight"] && s.Annotations["helm.sh/hook-weight"] != "-10" {
					t.Errorf("the hook Secret is not created before the Job: %v", s.Annotations)
				}
				return
			}
		}
		t.Error("no hook Secret for the migrations Job")
	})

	t.Run("noIngressNoMonitoringByDefault", func(t *testing.T) {
		for _, o := range r.objs {
			switch o.Kind {
			case "Ingress", "ServiceMonitor", "PrometheusRule":
				t.Errorf("%s rendered by default", o.Kind)
			}
		}
	})
}

// Every container of every values file runs as non-root with a read-only
// root filesystem, no privilege escalation and no capabilities (the Tilt
// development values excepted: live update writes into the container).
func TestChartContainersLockedDown(t *testing.T) {
	for _, file := range valuesFiles(t) {
		if strings.Contains(file, "tilt") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			r := render(t, file)
			specs := podSpecs(r.objs)
			if len(specs) == 0 {
				t.Fatal("no pods")
			}
			for key, spec := range specs {
				if spec.SecurityContext == nil || spec.SecurityContext.SeccompProfile == nil {
					t.Errorf("%s: no pod seccomp profile", key)
				}
				// The uninstall's cleanup deletes the helm test pod through the
				// API (TestChartUninstallDeletesTheTestPod); nothing else talks to it.
				if (spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken) && !strings.HasSuffix(key, "-test-cleanup") {
					t.Errorf("%s: mounts a service account token it never uses", key)
				}
				for _, c := range allContainers(spec) {
					checkContainerLockedDown(t, key, spec, c)
					if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
						t.Errorf("%s/%s: no memory limit or CPU request", key, c.Name)
					}
				}
			}
		})
	}
}

func checkContainerLockedDown(t *testing.T, key string, spec *corev1.PodSpec, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s/%s: no securityContext", key, c.Name)
		return
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil && spec.SecurityContext != nil {
		nonRoot = spec.SecurityContext.RunAsNonRoot
	}
	uid := sc.RunAsUser
	if uid == nil && spec.SecurityContext != nil {
		uid = spec.SecurityContext.RunAsUser
	}
	if nonRoot == nil || !*nonRoot || (uid != nil && *uid == 0) {
		t.Errorf("%s/%s: may run as root", key, c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s/%s: root filesystem is writable", key, c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s/%s: allows privilege escalation", key, c.Name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s/%s: privileged", key, c.Name)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s/%s: capabilities not all dropped: %+v", key, c.Name, sc.Capabilities)
	}
}

func TestChartAllFeatures(t *testing.T) {
	r := render(t, filepath.Join(chartDir(t), "ci", "all-features-values.yaml"))
	deps := deployments(r.objs)

	t.Run("ingressOnlyForTheGateway", func(t *testing.T) {
		ings := find[*networkingv1.Ingress](r.objs)
		if len(ings) != 1 {
			t.Fatalf("%d Ingresses, want 1", len(ings))
		}
		n := 0
		for _, rule := range ings[0].Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				n++
				if p.Backend.Service == nil || p.Backend.Service.Name != name("gateway") || p.Backend.Service.Port.Name != "http" {
					t.Errorf("Ingress path %s goes to %+v, not the gateway", p.Path, p.Backend)
				}
			}
		}
		if n == 0 || len(ings[0].Spec.TLS) == 0 || ings[0].Spec.IngressClassName == nil {
			t.Error("Ingress without paths, TLS or class")
		}
	})

	t.Run("everyAPIAutoscaled", func(t *testing.T) {
		if n := len(find[*autoscalingv2.HorizontalPodAutoscaler](r.objs)); n != len(apis)+len(workers) {
			t.Errorf("%d HPAs, want %d", n, len(apis)+len(workers))
		}
	})

	t.Run("imagesFromTheRegistry", func(t *testing.T) {
		for comp, d := range deps {
			if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "ghcr.io/acme/coworkjobs/") || !strings.HasSuffix(img, ":2.0.0-rc1") {
				t.Errorf("%s: image %s", comp, img)
			}
			if len(d.Spec.Template.Spec.ImagePullSecrets) != 1 {
				t.Errorf("%s: no image pull secret", comp)
			}
		}
		if deps["mailcatcher"] == nil {
			t.Error("mailcatcher enabled but not rendered")
		}
	})

	t.Run("gomemlimitFromGi", func(t *testing.T) {
		for _, e := range deps["gateway"].Spec.Template.Spec.Containers[0].Env {
			if e.Name == "GOMEMLIMIT" && e.Value != "921MiB" {
				t.Errorf("GOMEMLIMIT %q for a 1Gi limit, want 921MiB", e.Value)
			}
		}
	})

	t.Run("serviceMonitorScrapesEveryAPI", func(t *testing.T) {
		sms := find[*monitoringv1.ServiceMonitor](r.objs)
		if len(sms) != 1 {
			t.Fatalf("%d ServiceMonitors", len(sms))
		}
		sm := sms[0]
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" {
			t.Errorf("endpoints %+v", sm.Spec.Endpoints)
		}
		sel, err := metav1LabelSelector(&sm.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		scraped := 0
		for _, s := range find[*corev1.Service](r.objs) {
			if sel.Matches(labels.Set(s.Labels)) {
				scraped++
				if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
					t.Errorf("Service %s selected but has no metrics port", s.Name)
				}
			}
		}
		if scraped != len(apis)+len(workers) {
			t.Errorf("ServiceMonitor selects %d Services, want %d", scraped, len(apis)+len(workers))
		}
		if sm.Labels["release"] != "kube-prometheus-stack" {
			t.Error("ServiceMonitor labels from values missing")
		}
	})

	t.Run("alerts", func(t *testing.T) {
		rules := find[*monitoringv1.PrometheusRule](r.objs)
		if len(rules) != 1 {
			t.Fatalf("%d PrometheusRules", len(rules))
		}
		checkRuleGroupsEqual(t, rules[0].Spec.Groups, readRulesFile(t).Groups)
		checkRulesLabelContract(t, r.objs)
	})

	t.Run("dashboardConfigMap", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(chartDir(t), "files", "dashboards", "*.json"))
		if len(files) == 0 {
			t.Fatal("no dashboard files")
		}
		for _, c := range find[*corev1.ConfigMap](r.objs) {
			if c.Name != release+"-coworkjobs-dashboards" {
				continue
			}
			if c.Labels["grafana_dashboard"] != "1" || c.Namespace != "monitoring" {
				t.Errorf("dashboard ConfigMap labels %v namespace %q", c.Labels, c.Namespace)
			}
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				data, ok := c.Data[filepath.Base(f)]
				if !ok || strings.TrimSpace(data) != strings.TrimSpace(string(src)) {
					t.Errorf("%s not shipped as it is", filepath.Base(f))
				}
				var dash struct {
					UID    string           `json:"uid"`
					Title  string           `json:"title"`
					Panels []map[string]any `json:"panels"`
				}
				if err := json.Unmarshal([]byte(data), &dash); err != nil || dash.UID == "" || len(dash.Panels) == 0 {
					t.Errorf("%s: not a dashboard (%v)", filepath.Base(f), err)
				}
			}
			return
		}
		t.Error("no dashboard ConfigMap")
	})

	t.Run("networkPolicyPeersFromValues", func(t *testing.T) {
		for _, p := range find[*networkingv1.NetworkPolicy](r.objs) {
			if p.Name != name("gateway") {
				continue
			}
			// The ingress controller's namespace, and the helm test pod.
			if len(p.Spec.Ingress) == 0 || len(p.Spec.Ingress[0].From) != 2 || p.Spec.Ingress[0].From[0].NamespaceSelector == nil {
				t.Errorf("gateway policy does not restrict to the ingress namespace: %+v", p.Spec.Ingress)
			}
		}
		testPod := []*corev1.Pod{helmTestPod(t, r)}
		// The test pod reaches the gateway's API and every admin port even
		// with the peers restricted.
		for _, p := range find[*networkingv1.NetworkPolicy](r.objs) {
			for _, rule := range p.Spec.Ingress {
				if rule.Ports[0].Port.String() == "http" && p.Name != name("gateway") {
					continue
				}
				admitted := false
				for _, peer := range rule.From {
					if peer.PodSelector != nil && peer.NamespaceSelector == nil {
						sel, _ := metav1LabelSelector(peer.PodSelector)
						admitted = admitted || sel.Matches(labels.Set(testPod[0].Labels))
					}
				}
				if !admitted {
					t.Errorf("NetworkPolicy %s: the helm test pod cannot reach port %s", p.Name, rule.Ports[0].Port.String())
				}
			}
		}
	})
}

func TestChartExistingSecret(t *testing.T) {
	r := render(t, filepath.Join(chartDir(t), "ci", "existing-secret-values.yaml"))
	if s := find[*corev1.Secret](r.objs); len(s) != 0 {
		t.Errorf("%d Secrets rendered with secrets.existingSecret", len(s))
	}
	refs := 0
	for key, spec := range podSpecs(r.objs) {
		for _, c := range spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					refs++
					if e.ValueFrom.SecretKeyRef.Name != "coworkjobs-prod" {
						t.Errorf("%s/%s: %s from Secret %s", key, c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name)
					}
				}
			}
		}
	}
	if refs == 0 {
		t.Error("no secret references")
	}
	if n := len(find[*networkingv1.NetworkPolicy](r.objs)); n != 0 {
		t.Errorf("%d NetworkPolicies with networkPolicy.enabled=false", n)
	}
}

// config.upstreamBalance: by default (dns) each backend gets a headless
// Service selecting its API pods, and the gateway (only it: the jobs API's
// directory client keeps the ConfigMap's Service URL) is pointed at them;
// with connection the gateway pools connections to the backends' Services
// and no headless Service exists.
func TestChartUpstreamBalance(t *testing.T) {
	headless := func(r rendered) map[string]*corev1.Service {
		m := map[string]*corev1.Service{}
		for _, s := range find[*corev1.Service](r.objs) {
			if s.Spec.ClusterIP == corev1.ClusterIPNone {
				m[s.Name] = s
			}
		}
		return m
	}
	conn := renderValues(t, "upstreamBalance connection", map[string]any{"config": map[string]any{"upstreamBalance": "connection"}})
	gwConn := envOf(deployments(conn.objs)["gateway"])
	if got := gwConn["UPSTREAM_BALANCE"].Value; got != "connection" {
		t.Errorf("UPSTREAM_BALANCE %q, want connection", got)
	}
	if _, ok := gwConn["JOBS_URL"]; ok {
		t.Errorf("with connection the gateway's JOBS_URL is overridden to %q", gwConn["JOBS_URL"].Value)
	}
	if h := headless(conn); len(h) != 0 {
		t.Errorf("headless Services with connection: %v", h)
	}

	r := render(t, "")
	h := headless(r)
	if len(h) != len(backends) {
		t.Errorf("%d headless Services, want one per backend (%d)", len(h), len(backends))
	}
	ds := deployments(r.objs)
	gw := envOf(ds["gateway"])
	if got := gw["UPSTREAM_BALANCE"].Value; got != "dns" {
		t.Errorf("UPSTREAM_BALANCE %q, want dns", got)
	}
	for _, b := range backends {
		name := release + "-coworkjobs-" + b + "-headless"
		svc, ok := h[name]
		if !ok {
			t.Errorf("no headless Service %s", name)
			continue
		}
		pods := ds[b].Spec.Template.Labels
		if sel := labels.SelectorFromSet(svc.Spec.Selector); len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(pods)) {
			t.Errorf("%s selects %v, not the %s pods (%v)", name, svc.Spec.Selector, b, pods)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
			t.Errorf("%s ports %+v, want 8080 -> http", name, svc.Spec.Ports)
		}
		url := strings.ToUpper(b) + "_URL"
		if got, want := gw[url].Value, "http://"+name+":8080"; got != want {
			t.Errorf("gateway %s %q, want %q", url, got, want)
		}
		if e, ok := envOf(ds[b])[url]; ok {
			t.Errorf("%s's own %s overridden to %q", b, url, e.Value)
		}
	}
	if got := configMapData(t, r)["DIRECTORY_URL"]; got != "http://"+release+"-coworkjobs-directory:8080" {
		t.Errorf("ConfigMap DIRECTORY_URL %q: the jobs API's directory client must keep the Service", got)
	}
	if _, err := renderChart(t, map[string]any{"config": map[string]any{"extraEnv": map[string]any{"UPSTREAM_BALANCE": "dns"}}}, nil); err == nil {
		t.Error("UPSTREAM_BALANCE in config.extraEnv was accepted (config.upstreamBalance sets it)")
	}
}

// secrets.databaseReadURL reaches the APIs that read from a replica (jobs,
// content, community), as an optional key, so an existingSecret without it
// still starts;
// unset, nothing reads it and the chart's Secret has no such key.
func TestChartDatabaseReadURL(t *testing.T) {
	readers := func(r rendered) map[string]corev1.EnvVar {
		m := map[string]corev1.EnvVar{}
		for name, d := range deployments(r.objs) {
			if e, ok := envOf(d)["DATABASE_READ_URL"]; ok {
				m[name] = e
			}
		}
		return m
	}
	secretKeys := func(r rendered) map[string]bool {
		m := map[string]bool{}
		for _, s := range find[*corev1.Secret](r.objs) {
			for k := range s.Data {
				m[k] = true
			}
		}
		return m
	}
	def := render(t, "")
	if got := readers(def); len(got) != 0 {
		t.Errorf("DATABASE_READ_URL without secrets.databaseReadURL: %v", got)
	}
	if secretKeys(def)["DATABASE_READ_URL"] {
		t.Error("the chart's Secret has DATABASE_READ_URL though none was given")
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"databaseReadURL", map[string]any{"secrets": map[string]any{"databaseReadURL": "postgres://replica:5432/coworkjobs"}}},
		{"existingSecret", readValues(t, filepath.Join(chartDir(t), "ci", "existing-secret-values.yaml"))},
	} {
		r := renderValues(t, tc.name, tc.values)
		got := readers(r)
		if len(got) != 3 {
			t.Errorf("%s: DATABASE_READ_URL read by %v, want jobs, content and community", tc.name, got)
		}
		for _, api := range []string{"jobs", "content", "community"} {
			e, ok := got[api]
			if !ok {
				t.Errorf("%s: %s does not read DATABASE_READ_URL", tc.name, api)
				continue
			}
			if ref := e.ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional {
				t.Errorf("%s: %s's DATABASE_READ_URL is not an optional secret key: %+v", tc.name, api, e)
			}
		}
		if tc.name == "databaseReadURL" && !secretKeys(r)["DATABASE_READ_URL"] {
			t.Error("the chart's Secret lacks the DATABASE_READ_URL it was given")
		}
	}
	if _, err := renderChart(t, map[string]any{"secrets": map[string]any{"databaseReadURL": "mysql://x"}}, nil); err == nil {
		t.Error("a non-PostgreSQL databaseReadURL was accepted")
	}
}

// config.responseCacheMB turns on the gateway's response cache
// (RESPONSE_CACHE_MB, 16 by default), which is keyed by the change versions
// every writer bumps in Redis: every API and worker (whose pods also run the
// seeds and jobs-admin) reads REDIS_URL from the Secret, with the cache on or
// off, so no write goes unannounced to a cache switched on later.
func TestChartResponseCache(t *testing.T) {
	checkRedis := func(t *testing.T, r rendered) {
		t.Helper()
		ds := deployments(r.objs)
		want := append(slices.Clone(apis), "jobs-worker", "community-worker")
		for _, comp := range want {
			d := ds[comp]
			if d == nil {
				t.Errorf("no Deployment %s", comp)
				continue
			}
			e, ok := envOf(d)["REDIS_URL"]
			if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != "REDIS_URL" {
				t.Errorf("%s: no REDIS_URL from the Secret (%+v): its writes would not bump the change versions", comp, e)
			}
		}
		for w := range workers {
			if !slices.Contains(want, w) {
				t.Errorf("worker %s not checked", w)
			}
		}
	}
	cacheMB := func(t *testing.T, r rendered) (string, bool) {
		t.Helper()
		e, ok := envOf(deployments(r.objs)["gateway"])["RESPONSE_CACHE_MB"]
		return e.Value, ok
	}

	def := render(t, "")
	if got, ok := cacheMB(t, def); !ok || got != "16" {
		t.Errorf("gateway RESPONSE_CACHE_MB %q (set: %v), want 16 by default", got, ok)
	}
	// Shared in Redis by default: the gateways' heaps hold no answers.
	genv := envOf(deployments(def.objs)["gateway"])
	if genv["RESPONSE_CACHE_STORE"].Value != "redis" || genv["RESPONSE_CACHE_TTL"].Value != "10m" {
		t.Errorf("gateway RESPONSE_CACHE_STORE %q, RESPONSE_CACHE_TTL %q; want redis, 10m by default",
			genv["RESPONSE_CACHE_STORE"].Value, genv["RESPONSE_CACHE_TTL"].Value)
	}
	mem := renderValues(t, "responseCacheStore memory", map[string]any{"config": map[string]any{"responseCacheStore": "memory", "responseCacheTTL": "90s"}})
	if genv := envOf(deployments(mem.objs)["gateway"]); genv["RESPONSE_CACHE_STORE"].Value != "memory" || genv["RESPONSE_CACHE_TTL"].Value != "90s" {
		t.Errorf("with responseCacheStore memory, TTL 90s: %q, %q", genv["RESPONSE_CACHE_STORE"].Value, genv["RESPONSE_CACHE_TTL"].Value)
	}
	for _, bad := range []map[string]any{{"responseCacheStore": "disk"}, {"responseCacheTTL": "ten minutes"}, {"responseCacheTTL": 600}} {
		if _, err := renderChart(t, map[string]any{"config": bad}, nil); err == nil {
			t.Errorf("config %v accepted", bad)
		}
	}
	checkRedis(t, def)
	for comp, d := range deployments(def.objs) {
		if _, ok := envOf(d)["RESPONSE_CACHE_MB"]; ok && comp != "gateway" {
			t.Errorf("%s has RESPONSE_CACHE_MB (the gateway's alone)", comp)
		}
	}

	off := renderValues(t, "responseCacheMB 0", map[string]any{"config": map[string]any{"responseCacheMB": 0}})
	if got, ok := cacheMB(t, off); !ok || got != "0" {
		t.Errorf("gateway RESPONSE_CACHE_MB %q (set: %v) with responseCacheMB 0, want 0", got, ok)
	}
	checkRedis(t, off)

	checkRedis(t, render(t, filepath.Join(chartDir(t), "ci", "existing-secret-values.yaml")))

	for what, vals := range map[string]map[string]any{
		"config.extraEnv":    {"config": map[string]any{"extraEnv": map[string]any{"RESPONSE_CACHE_MB": "64"}}},
		"extraEnv":           {"extraEnv": []any{map[string]any{"name": "RESPONSE_CACHE_MB", "value": "64"}}},
		"gateway env":        {"apis": map[string]any{"gateway": map[string]any{"env": map[string]any{"RESPONSE_CACHE_MB": "64"}}}},
		"store in extraEnv":  {"extraEnv": []any{map[string]any{"name": "RESPONSE_CACHE_STORE", "value": "memory"}}},
		"TTL in gateway env": {"apis": map[string]any{"gateway": map[string]any{"env": map[string]any{"RESPONSE_CACHE_TTL": "1h"}}}},
	} {
		if _, err := renderChart(t, vals, nil); err == nil {
			t.Errorf("RESPONSE_CACHE_MB in %s was accepted (config.responseCacheMB sets it)", what)
		}
	}
	for _, bad := range []any{-1, 4097, "16"} {
		if _, err := renderChart(t, map[string]any{"config": map[string]any{"responseCacheMB": bad}}, nil); err == nil {
			t.Errorf("responseCacheMB %v accepted", bad)
		}
	}
}

func TestChartSchemaRejectsBadValues(t *testing.T) {
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]any{
		"unknownTopLevelKey":  {"replicas": 3},
		"unknownAPI":          {"apis": map[string]any{"gatway": map[string]any{"replicaCount": 1}}},
		"negativeReplicas":    {"apis": map[string]any{"jobs": map[string]any{"replicaCount": -1}}},
		"badLogLevel":         {"config": map[string]any{"logLevel": "verbose"}},
		"badUpstreamBalance":  {"config": map[string]any{"upstreamBalance": "random"}},
		"shortSecret":         {"secrets": map[string]any{"internalIdentitySecret": "short"}},
		"badPullPolicy":       {"image": map[string]any{"pullPolicy": "Sometimes"}},
		"extraEnvAsMap":       {"extraEnv": map[string]any{"A": "b"}},
		"envVarValueAndFrom":  {"apis": map[string]any{"jobs": map[string]any{"extraEnv": []any{map[string]any{"name": "A", "value": "b", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}}}},
		"envVarTypo":          {"extraEnv": []any{map[string]any{"name": "A", "valuefrom": map[string]any{}}}},
		"mountWithoutPath":    {"extraVolumeMounts": []any{map[string]any{"name": "x"}}},
		"badDigest":           {"apis": map[string]any{"gateway": map[string]any{"image": map[string]any{"digest": "latest"}}}},
		"badSpread":           {"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}}},
		"prometheusThreshold": {"metrics": map[string]any{"prometheusRule": map[string]any{"errorRatio": 0.05}}},
	}
	for n, vals := range cases {
		t.Run(n, func(t *testing.T) {
			_, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace}, nil)
			if err == nil {
				t.Fatal("values accepted")
			}
		})
	}
}
