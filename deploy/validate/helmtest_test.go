package validate

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeCurl stands in for curl inside the helm test script: it answers from
// FAKE_* variables as the cluster would (each admin port's /readyz, the API
// index, /v2/health with or without a key), with curl's -f, -o and -w.
const fakeCurl = `#!/bin/sh
out= fmt= fail=0 url= key=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    -w) fmt=$2; shift ;;
    -H) key=1; shift ;;
    --max-time|--retry|--retry-delay) shift ;;
    --*) ;;
    -*) case "$1" in *f*) fail=1 ;; esac ;;
    *) url=$1 ;;
  esac
  shift
done
case "$url" in
  */readyz)
    svc=${url#http://}; port=${svc#*:}; port=${port%%/*}; svc=${svc%%:*}
    # Every component answers /readyz on its admin port; an API's API port
    # answers it too, but the NetworkPolicies keep that port to its callers.
    if [ "$port" != 9090 ]; then code=404 body='not found'
    else case " $FAKE_NOT_READY " in *" $svc "*) code=503 body=not-ready ;; *) code=200 body=ok ;; esac; fi ;;
  */v2/health)
    if [ -n "$key" ]; then code=200 body=$FAKE_HEALTH
    else code=${FAKE_HEALTH_NOKEY_CODE:-401} body='{"success":false,"status":401,"error":{"code":"unauthorized"}}'; fi ;;
  */v2) code=200 body='{"success":true}' ;;
  *) echo "fake curl: unexpected URL $url" >&2; exit 6 ;;
esac
if [ -n "$out" ]; then printf '%s' "$body" >"$out"; else printf '%s' "$body"; fi
[ -n "$fmt" ] && printf "$(printf '%s' "$fmt" | sed "s/%{http_code}/$code/")"
if [ "$fail" = 1 ] && [ "$code" -ge 400 ]; then echo "curl: (22) The requested URL returned error: $code" >&2; exit 22; fi
exit 0
`

const (
	healthOK = `{"success":true,"status":200,"data":{"memory_usage":8388608,"php_version":"go1.26.8",` +
		`"rate_limiter":"redis","redis":{"status":"connected","version":"7.0.15"},"services":{"content":{"status":"up"},"jobs":{"status":"up"}},"status":"ok"}}`
	healthDegraded = `{"success":true,"status":200,"data":{"memory_usage":8388608,"php_version":"go1.26.8",` +
		`"rate_limiter":"local","redis":{"status":"disconnected","version":""},"services":{"content":{"status":"down"},"jobs":{"status":"up"}},"status":"degraded"}}`
)

func helmTestPod(t *testing.T, r rendered) *corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, p := range find[*corev1.Pod](r.objs) {
		if p.Annotations["helm.sh/hook"] == "test" {
			pods = append(pods, p)
		}
	}
	if len(pods) != 1 {
		t.Fatalf("want one helm test pod, got %d", len(pods))
	}
	return pods[0]
}

// runHelmTest runs the test pod's script with /bin/sh as the pod would, with
// curl and sleep faked; it returns the output and whether it passed.
func runHelmTest(t *testing.T, pod *corev1.Pod, env ...string) (string, bool) {
	t.Helper()
	c := pod.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"/bin/sh", "-ec"}) || len(c.Args) != 1 {
		t.Fatalf("test container runs %v %d args, want /bin/sh -ec and a script", c.Command, len(c.Args))
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(fakeCurl), 0o700); err != nil { //nolint:gosec // G306: an executable stand-in, in the test's own directory
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sleep"), []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil { //nolint:gosec // G306: as above
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-ec", c.Args[0])
	cmd.Env = append([]string{"PATH=" + bin + ":" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// `helm test` fails when the gateway says degraded or a component is not
// ready, passes when all is well, and `helm test --logs` can read the pod
// after a success (only before-hook-creation deletes it).
func TestChartHelmTest(t *testing.T) {
	for _, file := range []string{"", filepath.Join(chartDir(t), "ci", "all-features-values.yaml")} {
		pod := helmTestPod(t, render(t, file))
		if got := pod.Annotations["helm.sh/hook-delete-policy"]; got != "before-hook-creation" {
			t.Errorf("%s: hook-delete-policy %q: a pod deleted on success leaves nothing for helm test --logs", filepath.Base(file), got)
		}
	}

	t.Run("withoutKey", func(t *testing.T) {
		pod := helmTestPod(t, render(t, ""))
		if out, ok := runHelmTest(t, pod); !ok {
			t.Errorf("all ready, health refused without a key: failed\n%s", out)
		}
		out, ok := runHelmTest(t, pod, "FAKE_NOT_READY="+name("jobs-worker"))
		if ok || !strings.Contains(out, "NOT READY: "+name("jobs-worker")) {
			t.Errorf("a worker not ready (Temporal unreachable): passed=%v\n%s", ok, out)
		}
		for _, comp := range append(slices.Clone(apis), "jobs-worker", "community-worker") {
			if !strings.Contains(out, name(comp)) {
				t.Errorf("the readiness of %s is not checked", comp)
			}
		}
		if out, ok := runHelmTest(t, pod, "FAKE_HEALTH_NOKEY_CODE=200"); ok {
			t.Errorf("health answered without a key: passed\n%s", out)
		}
	})

	t.Run("withKey", func(t *testing.T) {
		pod := helmTestPod(t, render(t, filepath.Join(chartDir(t), "ci", "all-features-values.yaml")))
		if e := pod.Spec.Containers[0].Env; len(e) != 1 || e[0].Name != "API_KEY" || e[0].ValueFrom.SecretKeyRef.Name != "coworkjobs-test-key" {
			t.Fatalf("API_KEY not from tests.apiKeySecret: %+v", e)
		}
		cases := map[string]struct {
			body string
			pass bool
		}{
			"ok":             {healthOK, true},
			"degraded":       {healthDegraded, false},
			"prettyDegraded": {strings.ReplaceAll(healthDegraded, `":`, `": `), false},
			"noStatus":       {`{"success":true,"status":200,"data":{}}`, false},
			"nestedOnlyUp":   {`{"success":true,"status":200,"data":{"services":{"jobs":{"status":"up"}}}}`, false},
		}
		for n, c := range cases {
			t.Run(n, func(t *testing.T) {
				out, ok := runHelmTest(t, pod, "API_KEY=k", "FAKE_HEALTH="+c.body)
				if ok != c.pass {
					t.Errorf("passed=%v, want %v\n%s", ok, c.pass, out)
				}
			})
		}
	})
}

// helm uninstall never deletes hooks, and the test pod is kept for --logs: a
// pre-delete hook deletes it, with a ServiceAccount that may delete that one
// pod and nothing else, and everything of that hook goes once it succeeded.
func TestChartUninstallDeletesTheTestPod(t *testing.T) {
	r := render(t, "")
	test := helmTestPod(t, r)
	var cleanup *corev1.Pod
	for _, p := range find[*corev1.Pod](r.objs) {
		if p.Annotations["helm.sh/hook"] == "pre-delete" {
			cleanup = p
		}
	}
	if cleanup == nil {
		t.Fatal("no pre-delete pod deletes the helm test pod")
	}
	if !strings.Contains(cleanup.Spec.Containers[0].Args[0], "/pods/"+test.Name) {
		t.Errorf("the pre-delete pod does not delete %s:\n%s", test.Name, cleanup.Spec.Containers[0].Args[0])
	}
	roles := find[*rbacv1.Role](r.objs)
	if len(roles) != 1 {
		t.Fatalf("%d Roles, want the cleanup's one", len(roles))
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{test.Name}, Verbs: []string{"delete"}}}
	if !reflect.DeepEqual(roles[0].Rules, want) {
		t.Errorf("cleanup Role rules %+v, want only delete of %s", roles[0].Rules, test.Name)
	}
	var account metav1.Object
	for _, sa := range find[*corev1.ServiceAccount](r.objs) {
		if sa.Name == cleanup.Spec.ServiceAccountName {
			account = sa
		}
	}
	if account == nil {
		t.Fatalf("no ServiceAccount %q for the cleanup pod", cleanup.Spec.ServiceAccountName)
	}
	for _, o := range []metav1.Object{account, roles[0], find[*rbacv1.RoleBinding](r.objs)[0], cleanup} {
		if o.GetAnnotations()["helm.sh/hook"] != "pre-delete" || o.GetAnnotations()["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
			t.Errorf("%s: annotations %v, want a pre-delete hook deleted once it succeeded", o.GetName(), o.GetAnnotations())
		}
	}
	if cleanup.Spec.ServiceAccountName != roles[0].Name {
		t.Errorf("cleanup pod runs as %q, want %q", cleanup.Spec.ServiceAccountName, roles[0].Name)
	}
}
