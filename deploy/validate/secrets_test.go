package validate

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// clusterWith is a lookup that sees the given objects, as `helm upgrade`
// sees the release's Secret.
type clusterWith struct{ client dynamic.Interface }

func newClusterWith(t *testing.T, objs ...runtime.Object) clusterWith {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return clusterWith{dynamicfake.NewSimpleDynamicClient(scheme, objs...)}
}

func (c clusterWith) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	switch {
	case apiVersion == "v1" && kind == "Secret":
		return c.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}), true, nil
	case apiVersion == "apps/v1" && kind == "Deployment":
		// None running: the Deployments' own lookups find nothing.
		return c.client.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}), true, nil
	}
	return nil, false, nil
}

// checksums is each Deployment's checksum/secret and checksum/config.
func checksums(t *testing.T, r rendered) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	for comp, d := range deployments(r.objs) {
		a := d.Spec.Template.Annotations
		if a["checksum/secret"] == "" || a["checksum/config"] == "" {
			t.Fatalf("%s: no checksum annotations: %v", comp, a)
		}
		out[comp] = [2]string{a["checksum/secret"], a["checksum/config"]}
	}
	return out
}

// secretKeysRead is the keys of the chart's Secret a Deployment reads.
func secretKeysRead(d *corev1.PodSpec) []string {
	var keys []string
	for _, e := range d.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			keys = append(keys, e.ValueFrom.SecretKeyRef.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

func secretData(t *testing.T, r rendered, name string) map[string][]byte {
	t.Helper()
	for _, s := range find[*corev1.Secret](r.objs) {
		if s.Name == name {
			return s.Data
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}

// Secrets do not change between renders of the same values: Argo CD renders
// with `helm template` on every sync, and a no-op `helm upgrade` must replace
// no pod; a changed value replaces exactly the pods that read it.
func TestChartSecretsStable(t *testing.T) {
	first, second := render(t, ""), render(t, "")

	t.Run("sameValuesSameChecksums", func(t *testing.T) {
		a, b := checksums(t, first), checksums(t, second)
		if !maps.Equal(a, b) {
			t.Errorf("two renders of the same values differ:\n%v\n%v", a, b)
		}
	})

	t.Run("sameKeysSameChecksumWithinARender", func(t *testing.T) {
		byKeys := map[string]string{}
		for comp, d := range deployments(first.objs) {
			keys := strings.Join(secretKeysRead(&d.Spec.Template.Spec), ",")
			sum := d.Spec.Template.Annotations["checksum/secret"]
			if prev, ok := byKeys[keys]; ok && prev != sum {
				t.Errorf("%s reads %s like another Deployment but has another checksum/secret", comp, keys)
			}
			byKeys[keys] = sum
		}
		seen := map[string]string{}
		for keys, sum := range byKeys {
			if other, dup := seen[sum]; dup {
				t.Errorf("Deployments reading %s and %s share a checksum/secret", keys, other)
			}
			seen[sum] = keys
		}
		if len(byKeys) < 4 {
			t.Errorf("only %d distinct sets of secret keys: %v", len(byKeys), byKeys)
		}
	})

	t.Run("hookSecretHoldsTheSameGeneratedValues", func(t *testing.T) {
		main, hook := secretData(t, first, strings.TrimSuffix(name(""), "-")), secretData(t, first, name("migrations"))
		if len(main["INTERNAL_IDENTITY_SECRET"]) < 32 || !maps.EqualFunc(main, hook, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Error("the migrations hook's Secret and the chart's Secret hold different values in one render")
		}
	})

	t.Run("aChangedValueRestartsOnlyItsReaders", func(t *testing.T) {
		base := checksums(t, first)
		deps := deployments(first.objs)
		cases := map[string]string{
			"databaseURL":            "DATABASE_URL",
			"redisURL":               "REDIS_URL",
			"smtpURL":                "SMTP_URL",
			"internalIdentitySecret": "INTERNAL_IDENTITY_SECRET",
			"newsletterTokenSecret":  "NEWSLETTER_TOKEN_SECRET",
		}
		values := map[string]string{
			"databaseURL": "postgres://app@db-2:5432/coworkjobs", "redisURL": "redis://redis-2:6379/0",
			"smtpURL": "smtp://smtp-2:25", "internalIdentitySecret": strings.Repeat("i", 40), "newsletterTokenSecret": strings.Repeat("n", 40),
		}
		for value, key := range cases {
			t.Run(value, func(t *testing.T) {
				changed := checksums(t, renderValues(t, value, map[string]any{"secrets": map[string]any{value: values[value]}}))
				readers := 0
				for comp, d := range deps {
					reads := slices.Contains(secretKeysRead(&d.Spec.Template.Spec), key)
					if reads {
						readers++
					}
					if moved := changed[comp][0] != base[comp][0]; moved != reads {
						t.Errorf("%s (reads %s: %v): checksum/secret changed: %v", comp, key, reads, moved)
					}
					if changed[comp][1] != base[comp][1] {
						t.Errorf("%s: checksum/config changed with a secret", comp)
					}
				}
				if readers == 0 {
					t.Errorf("no Deployment reads %s", key)
				}
			})
		}
	})

	t.Run("upgradeKeepsTheReleasesGeneratedKeys", func(t *testing.T) {
		held := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSuffix(name(""), "-"), Namespace: namespace},
			Data: map[string][]byte{
				"INTERNAL_IDENTITY_SECRET": []byte(strings.Repeat("k", 48)),
				"NEWSLETTER_TOKEN_SECRET":  []byte(strings.Repeat("t", 48)),
			},
		}
		out, err := renderChart(t, map[string]any{}, newClusterWith(t, held))
		if err != nil {
			t.Fatal(err)
		}
		up := decodeRendered(t, out)
		for _, n := range []string{strings.TrimSuffix(name(""), "-"), name("migrations")} {
			data := secretData(t, up, n)
			for k, v := range held.Data {
				if string(data[k]) != string(v) {
					t.Errorf("Secret %s: %s %q, want the release's %q", n, k, data[k], v)
				}
			}
		}
		if a, b := checksums(t, up), checksums(t, first); !maps.Equal(a, b) {
			t.Errorf("an upgrade over the installed Secret changes the checksums:\n%v\n%v", a, b)
		}
	})

	t.Run("existingSecret", func(t *testing.T) {
		ext := func(n string, more map[string]any) map[string]string {
			s := map[string]any{"existingSecret": n}
			maps.Copy(s, more)
			out := map[string]string{}
			for comp, sums := range checksums(t, renderValues(t, n, map[string]any{"secrets": s})) {
				out[comp] = sums[0]
			}
			return out
		}
		a := ext("prod-a", nil)
		if b := ext("prod-a", map[string]any{"redisURL": "redis://unused:6379/0"}); !maps.Equal(a, b) {
			t.Error("with existingSecret, the chart's own secret values (unused) moved the checksums")
		}
		b := ext("prod-b", nil)
		for comp := range a {
			if a[comp] == b[comp] {
				t.Errorf("%s: another existingSecret, same checksum/secret", comp)
			}
		}
	})
}

// Stripe is optional: without it no workload reads its keys; with it only
// the jobs API does (and only its pods restart); with an existing Secret the
// jobs API reads them if they are there; one key without the other is refused.
func TestChartStripeSecrets(t *testing.T) {
	stripeKeys := []string{"STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"}
	reads := func(d *appsv1.Deployment) bool {
		keys := secretKeysRead(&d.Spec.Template.Spec)
		return slices.Contains(keys, stripeKeys[0]) && slices.Contains(keys, stripeKeys[1])
	}
	base := renderValues(t, "defaults", map[string]any{})
	for comp, d := range deployments(base.objs) {
		if reads(d) {
			t.Errorf("%s reads the Stripe keys without Stripe configured", comp)
		}
	}
	stripe := map[string]any{"secrets": map[string]any{"stripeSecretKey": "sk_test_x", "stripeWebhookSecret": "whsec_x"}}
	with := renderValues(t, "stripe", stripe)
	before, after := checksums(t, base), checksums(t, with)
	for comp, d := range deployments(with.objs) {
		if reads(d) != (comp == "jobs") {
			t.Errorf("%s reads the Stripe keys: %v", comp, reads(d))
		}
		if moved := before[comp][0] != after[comp][0]; moved != (comp == "jobs") {
			t.Errorf("%s: checksum/secret changed %v", comp, moved)
		}
	}
	data := secretData(t, with, strings.TrimSuffix(name(""), "-"))
	if string(data["STRIPE_SECRET_KEY"]) != "sk_test_x" || string(data["STRIPE_WEBHOOK_SECRET"]) != "whsec_x" {
		t.Errorf("Secret: %v", data)
	}
	existing := renderValues(t, "existingSecret", map[string]any{"secrets": map[string]any{"existingSecret": "ops-secret"}})
	jobs := deployments(existing.objs)["jobs"]
	for _, e := range jobs.Spec.Template.Spec.Containers[0].Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && slices.Contains(stripeKeys, ref.SecretKeyRef.Key) &&
			(ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional) {
			t.Errorf("%s from an existing Secret must be optional", e.Name)
		}
	}
	if !reads(jobs) {
		t.Error("with an existing Secret the jobs API does not read the Stripe keys")
	}
	if _, err := renderChart(t, map[string]any{"secrets": map[string]any{"stripeSecretKey": "sk_test_x"}}, nil); err == nil ||
		!strings.Contains(err.Error(), "go together") {
		t.Errorf("a Stripe key without its webhook secret: %v", err)
	}
}
