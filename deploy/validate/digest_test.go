package validate

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
)

// lintProblems is `helm lint --strict` with values given inline: every
// message that fails it (warnings too).
func lintProblems(t testing.TB, values map[string]any) []string {
	t.Helper()
	var out []string
	for _, m := range lint.All(chartDir(t), values, namespace, true).Messages {
		if m.Severity >= support.WarningSev {
			out = append(out, m.Error())
		}
	}
	return out
}

// A digest pins one image, so the chart takes one per API
// (apis.<name>.image.digest: <algorithm>:<32 or more hex digits>, rendered
// <repository>@<digest>) and none globally: the templates fail on image.digest.
// `helm lint` renders with the templates' fail turned into a log line, so only
// values.schema.json can make `helm lint --strict` refuse what `helm template`
// and `helm install` refuse: the schema says it too (image.digest only empty).
func TestChartImageDigest(t *testing.T) {
	digest := func(v string) map[string]any { return map[string]any{"digest": v} }
	bad := map[string]map[string]any{
		"global":           {"image": digest(gatewayDigest)},
		"globalAndPerAPI":  {"image": digest(gatewayDigest), "apis": map[string]any{"gateway": map[string]any{"image": digest(gatewayDigest)}}},
		"perAPITag":        {"apis": map[string]any{"gateway": map[string]any{"image": digest("latest")}}},
		"perAPINoHex":      {"apis": map[string]any{"gateway": map[string]any{"image": digest("sha256:")}}},
		"perAPIShortHex":   {"apis": map[string]any{"gateway": map[string]any{"image": digest("sha256:0123abcd")}}},
		"perAPIWithRepo":   {"apis": map[string]any{"gateway": map[string]any{"image": digest("coworkjobs/gateway@" + gatewayDigest)}}},
		"perWorkerNoAlgo":  {"workers": map[string]any{"jobsWorker": map[string]any{"image": digest("0123456789abcdef0123456789abcdef")}}},
		"mailcatcherSpace": {"mailcatcher": map[string]any{"image": digest("sha256: " + gatewayDigest[7:])}},
	}
	for name, vals := range bad {
		t.Run("lintRefuses/"+name, func(t *testing.T) {
			if p := lintProblems(t, vals); len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "/digest") {
				t.Errorf("helm lint --strict passes %v (problems: %q)", vals, p)
			}
		})
	}

	t.Run("templateRefusesAGlobalDigestWithoutTheSchema", func(t *testing.T) {
		// `helm template --skip-schema-validation`: the templates' own refusal.
		ch, err := loader.Load(chartDir(t))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := chartutil.ToRenderValuesWithSchemaValidation(ch, map[string]any{"image": digest(gatewayDigest)},
			chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, vals); err == nil || !strings.Contains(err.Error(), "apis.<name>.image.digest") {
			t.Errorf("image.digest: %v, want a render error that says what to set", err)
		}
	})

	t.Run("aGoodDigestLintsAndRenders", func(t *testing.T) {
		vals := map[string]any{"image": digest(""), "apis": map[string]any{
			"gateway": map[string]any{"image": digest(gatewayDigest)},
			"jobs":    map[string]any{"image": digest(jobsDigest)},
		}}
		if p := lintProblems(t, vals); len(p) != 0 {
			t.Fatalf("helm lint --strict: %q", p)
		}
		want := map[string]string{
			"gateway":     "coworkjobs/gateway@" + gatewayDigest,
			"jobs":        "coworkjobs/jobs@" + jobsDigest,
			"jobs-worker": "coworkjobs/jobs@" + jobsDigest,
		}
		for _, d := range find[*appsv1.Deployment](renderValues(t, "good digests", vals).objs) {
			comp := d.Labels["app.kubernetes.io/component"]
			if img, ok := want[comp]; ok {
				if got := d.Spec.Template.Spec.Containers[0].Image; got != img {
					t.Errorf("%s: image %s, want %s", comp, got, img)
				}
				delete(want, comp)
			}
		}
		if len(want) != 0 {
			t.Errorf("no Deployment for %v", want)
		}
	})
}
