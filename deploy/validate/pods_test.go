package validate

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const (
	gatewayDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	jobsDigest    = "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func envByName(c corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e // the last one wins, as in the kubelet
	}
	return m
}

func hasMount(c corev1.Container, name, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name && m.MountPath == path })
}

func hasVolume(spec corev1.PodSpec, name string) bool {
	return slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
}

// ci/pod-extras-values.yaml sets what operators routinely add to pods,
// globally and per component; each must reach the pods (decoded into the
// Kubernetes types), a component's value winning where the chart says so.
func TestChartPodExtras(t *testing.T) {
	r := render(t, filepath.Join(chartDir(t), "ci", "pod-extras-values.yaml"))
	deps := deployments(r.objs)
	if len(deps) != len(apis)+len(workers) {
		t.Fatalf("%d Deployments", len(deps))
	}
	for comp, d := range deps {
		spec := d.Spec.Template.Spec
		meta := d.Spec.Template.ObjectMeta
		c := spec.Containers[0]
		gw := comp == "gateway"

		if meta.Labels["team"] != "platform" {
			t.Errorf("%s: global podLabels missing: %v", comp, meta.Labels)
		}
		if meta.Labels["app.kubernetes.io/component"] != comp {
			t.Errorf("%s: podLabels overrode a selector label: %v", comp, meta.Labels)
		}
		sel, _ := metav1LabelSelector(d.Spec.Selector)
		if !sel.Matches(labels.Set(meta.Labels)) {
			t.Errorf("%s: the selector no longer matches the pods", comp)
		}
		wantTier := map[string]string{"gateway": "edge", "jobs-worker": "workers"}[comp]
		if meta.Labels["tier"] != wantTier {
			t.Errorf("%s: tier label %q, want %q (component podLabels)", comp, meta.Labels["tier"], wantTier)
		}
		wantAnn := "yes"
		if gw {
			wantAnn = "overridden"
		}
		if meta.Annotations["example.com/global"] != wantAnn || meta.Annotations["checksum/config"] == "" {
			t.Errorf("%s: annotations %v, want example.com/global=%s beside the checksums", comp, meta.Annotations, wantAnn)
		}

		wantPrio := "coworkjobs-default"
		if gw {
			wantPrio = "coworkjobs-edge"
		}
		if spec.PriorityClassName != wantPrio {
			t.Errorf("%s: priorityClassName %q, want %q", comp, spec.PriorityClassName, wantPrio)
		}

		env := envByName(c)
		if env["SSL_CERT_FILE"].Value != "/etc/ssl/extra/ca.crt" {
			t.Errorf("%s: global extraEnv value missing", comp)
		}
		if f := env["NODE_NAME"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "spec.nodeName" {
			t.Errorf("%s: global extraEnv valueFrom missing: %+v", comp, env["NODE_NAME"])
		}
		if db := env["DATABASE_URL"].ValueFrom; gw && (db == nil || db.SecretKeyRef == nil || db.SecretKeyRef.Name != "gateway-db") {
			t.Errorf("gateway: component extraEnv does not override DATABASE_URL: %+v", env["DATABASE_URL"])
		}
		if w := env["WORKER_NOTE"].ValueFrom; (comp == "jobs-worker") != (w != nil && w.ConfigMapKeyRef != nil) {
			t.Errorf("%s: WORKER_NOTE (jobs-worker's extraEnv) %+v", comp, env["WORKER_NOTE"])
		}

		if !hasVolume(spec, "extra-ca") || !hasMount(c, "extra-ca", "/etc/ssl/extra") || !hasMount(c, "tmp", "/tmp") {
			t.Errorf("%s: global extra volume/mount missing (or /tmp lost): %v %v", comp, spec.Volumes, c.VolumeMounts)
		}
		if gw != (hasVolume(spec, "geoip") && hasMount(c, "geoip", "/var/lib/geoip")) {
			t.Errorf("%s: the gateway's own volume is where it should not be, or missing", comp)
		}

		wantNode, wantTol, wantKey := map[string]string{"kubernetes.io/os": "linux"}, "dedicated", "topology.kubernetes.io/zone"
		if gw {
			wantNode, wantTol, wantKey = map[string]string{"node-role.example.com/edge": "true"}, "edge", "kubernetes.io/hostname"
		}
		if !maps.Equal(spec.NodeSelector, wantNode) {
			t.Errorf("%s: nodeSelector %v, want %v", comp, spec.NodeSelector, wantNode)
		}
		if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != wantTol {
			t.Errorf("%s: tolerations %+v, want the %s one", comp, spec.Tolerations, wantTol)
		}
		switch a := spec.Affinity; {
		case a == nil:
			t.Errorf("%s: no affinity", comp)
		case gw && (a.PodAntiAffinity == nil || a.NodeAffinity != nil):
			t.Errorf("gateway: its own affinity does not replace the global one: %+v", a)
		case !gw && (a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1):
			t.Errorf("%s: global node affinity missing: %+v", comp, a)
		}
		if len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].TopologyKey != wantKey {
			t.Errorf("%s: topologySpreadConstraints %+v, want one on %s", comp, spec.TopologySpreadConstraints, wantKey)
			continue
		}
		// Given without a labelSelector: the chart fills in the component's.
		tsc := spec.TopologySpreadConstraints[0]
		if tsc.LabelSelector == nil || !maps.Equal(tsc.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
			t.Errorf("%s: spread constraint selects %+v, want the component's selector labels", comp, tsc.LabelSelector)
		}
	}

	t.Run("digestsPinImages", func(t *testing.T) {
		want := map[string]string{
			"gateway":     "coworkjobs/gateway@" + gatewayDigest,
			"jobs":        "coworkjobs/jobs@" + jobsDigest,
			"jobs-worker": "coworkjobs/jobs@" + jobsDigest, // the worker runs the jobs image
			"directory":   "coworkjobs/directory:2.0.0",
		}
		for comp, img := range want {
			if got := deps[comp].Spec.Template.Spec.Containers[0].Image; got != img {
				t.Errorf("%s: image %s, want %s", comp, got, img)
			}
		}
		for _, j := range find[*batchv1.Job](r.objs) {
			for _, c := range j.Spec.Template.Spec.Containers {
				if c.Name == "jobs" && c.Image != want["jobs"] {
					t.Errorf("migrations: jobs image %s, want %s", c.Image, want["jobs"])
				}
			}
		}
	})

	t.Run("migrationsJobGetsTheGlobalExtras", func(t *testing.T) {
		jobs := find[*batchv1.Job](r.objs)
		if len(jobs) != 1 {
			t.Fatalf("%d Jobs", len(jobs))
		}
		spec := jobs[0].Spec.Template.Spec
		if spec.PriorityClassName != "coworkjobs-default" || jobs[0].Spec.Template.Labels["team"] != "platform" || len(spec.Tolerations) != 1 {
			t.Errorf("migrations Job: priorityClassName %q, labels %v, tolerations %v", spec.PriorityClassName, jobs[0].Spec.Template.Labels, spec.Tolerations)
		}
		if len(spec.TopologySpreadConstraints) != 0 && spec.TopologySpreadConstraints[0].LabelSelector == nil {
			t.Error("migrations Job: a spread constraint that selects nothing")
		}
		// The gateway's container gets the gateway's volume, so the pod has it once.
		n := 0
		for _, v := range spec.Volumes {
			if v.Name == "geoip" {
				n++
			}
		}
		for _, c := range spec.Containers {
			if !hasMount(c, "extra-ca", "/etc/ssl/extra") || envByName(c)["SSL_CERT_FILE"].Value == "" {
				t.Errorf("migrations/%s: global extra mount or env missing", c.Name)
			}
			if (c.Name == "gateway") != hasMount(c, "geoip", "/var/lib/geoip") {
				t.Errorf("migrations/%s: geoip mount where it should not be, or missing", c.Name)
			}
		}
		if n != 1 || !hasVolume(spec, "extra-ca") {
			t.Errorf("migrations Job volumes %v", spec.Volumes)
		}
	})
}

// By default every Deployment spreads its pods across nodes: a preference
// (ScheduleAnyway) on kubernetes.io/hostname over the component's own pods.
// spreadAcrossNodes=false drops it; a component's constraints replace it.
func TestChartSpreadsAcrossNodes(t *testing.T) {
	r := render(t, "")
	for comp, d := range deployments(r.objs) {
		tscs := d.Spec.Template.Spec.TopologySpreadConstraints
		if len(tscs) != 1 {
			t.Errorf("%s: %d spread constraints, want 1", comp, len(tscs))
			continue
		}
		tsc := tscs[0]
		if tsc.TopologyKey != "kubernetes.io/hostname" || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway || tsc.MaxSkew != 1 {
			t.Errorf("%s: spread %+v, want maxSkew 1 on kubernetes.io/hostname, ScheduleAnyway", comp, tsc)
		}
		sel, err := metav1LabelSelector(tsc.LabelSelector)
		if err != nil || tsc.LabelSelector == nil || !maps.Equal(tsc.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
			t.Errorf("%s: spread selects %+v, want the component's selector labels", comp, tsc.LabelSelector)
		}
		for other, o := range deployments(r.objs) {
			if other != comp && sel.Matches(labels.Set(o.Spec.Template.Labels)) {
				t.Errorf("%s: spread also counts %s's pods", comp, other)
			}
		}
	}
	for _, j := range find[*batchv1.Job](r.objs) {
		if n := len(j.Spec.Template.Spec.TopologySpreadConstraints); n != 0 {
			t.Errorf("Job %s: %d spread constraints (one pod: nothing to spread)", j.Name, n)
		}
	}

	off := renderValues(t, "spreadAcrossNodes=false", map[string]any{"spreadAcrossNodes": false})
	for comp, d := range deployments(off.objs) {
		if n := len(d.Spec.Template.Spec.TopologySpreadConstraints); n != 0 {
			t.Errorf("spreadAcrossNodes=false: %s has %d spread constraints", comp, n)
		}
	}
	own := renderValues(t, "jobs' own spread", map[string]any{"apis": map[string]any{"jobs": map[string]any{
		"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}}}}})
	deps := deployments(own.objs)
	if tscs := deps["jobs"].Spec.Template.Spec.TopologySpreadConstraints; len(tscs) != 1 || tscs[0].TopologyKey != "topology.kubernetes.io/zone" {
		t.Errorf("jobs: %+v, want only its own zone constraint", tscs)
	}
	if tscs := deps["directory"].Spec.Template.Spec.TopologySpreadConstraints; len(tscs) != 1 || tscs[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("directory: %+v, want the default", tscs)
	}
}
