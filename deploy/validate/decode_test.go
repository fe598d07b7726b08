package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository's root, found from this file's place.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// object is one decoded manifest.
type object struct {
	Source string // where it came from (template or kustomization)
	Kind   string
	Name   string
	Meta   metav1.ObjectMeta
	Obj    any // a pointer to the typed Kubernetes object
}

// kinds maps apiVersion/kind to the Go type a manifest must decode into.
var kinds = map[string]func() any{
	"v1/ConfigMap":                                    func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                                       func() any { return &corev1.Secret{} },
	"v1/Service":                                      func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                               func() any { return &corev1.ServiceAccount{} },
	"v1/Pod":                                          func() any { return &corev1.Pod{} },
	"v1/Namespace":                                    func() any { return &corev1.Namespace{} },
	"v1/PersistentVolumeClaim":                        func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":                              func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                             func() any { return &appsv1.StatefulSet{} },
	"autoscaling/v2/HorizontalPodAutoscaler":          func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":                   func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":              func() any { return &networkingv1.NetworkPolicy{} },
	"networking.k8s.io/v1/Ingress":                    func() any { return &networkingv1.Ingress{} },
	"batch/v1/Job":                                    func() any { return &batchv1.Job{} },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"monitoring.coreos.com/v1/ServiceMonitor":         func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule":         func() any { return &monitoringv1.PrometheusRule{} },
	"gateway.networking.k8s.io/v1/HTTPRoute":          func() any { return &httpRoute{} },
}

// httpRoute is the part of Gateway API's HTTPRoute (gateway.networking.k8s.io/v1)
// the chart renders, so that strict decoding catches a misplaced field
// without taking the Gateway API module as a dependency. Filters stay open:
// their shape is the implementation's business.
type httpRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ParentRefs []struct {
			Group       *string `json:"group,omitempty"`
			Kind        *string `json:"kind,omitempty"`
			Namespace   *string `json:"namespace,omitempty"`
			Name        string  `json:"name"`
			SectionName *string `json:"sectionName,omitempty"`
			Port        *int32  `json:"port,omitempty"`
		} `json:"parentRefs"`
		Hostnames []string `json:"hostnames,omitempty"`
		Rules     []struct {
			Matches []struct {
				Path *struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path,omitempty"`
				Headers     []map[string]any `json:"headers,omitempty"`
				QueryParams []map[string]any `json:"queryParams,omitempty"`
				Method      *string          `json:"method,omitempty"`
			} `json:"matches"`
			Filters  []map[string]any `json:"filters,omitempty"`
			Timeouts *struct {
				Request        *string `json:"request,omitempty"`
				BackendRequest *string `json:"backendRequest,omitempty"`
			} `json:"timeouts,omitempty"`
			BackendRefs []struct {
				Group     *string `json:"group,omitempty"`
				Kind      *string `json:"kind,omitempty"`
				Name      string  `json:"name"`
				Namespace *string `json:"namespace,omitempty"`
				Port      *int32  `json:"port,omitempty"`
				Weight    *int32  `json:"weight,omitempty"`
			} `json:"backendRefs"`
		} `json:"rules"`
	} `json:"spec"`
}

// decodeStrict turns one YAML document into its typed object. Duplicate keys,
// unknown fields, wrong types and unknown kinds are errors.
func decodeStrict(source string, doc []byte) (object, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return object{}, fmt.Errorf("%s: yaml: %w", source, err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return object{}, fmt.Errorf("%s: %w", source, err)
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return object{}, fmt.Errorf("%s: unexpected kind %s/%s", source, tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	strict, err := sigsjson.UnmarshalStrict(js, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return object{}, fmt.Errorf("%s: %s %w", source, tm.Kind, err)
	}
	if len(strict) > 0 {
		return object{}, fmt.Errorf("%s: %s: %w", source, tm.Kind, errors.Join(strict...))
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return object{}, fmt.Errorf("%s: metadata: %w", source, err)
	}
	if meta.Metadata.Name == "" {
		return object{}, fmt.Errorf("%s: %s without a name", source, tm.Kind)
	}
	return object{Source: source, Kind: tm.Kind, Name: meta.Metadata.Name, Meta: meta.Metadata, Obj: obj}, nil
}

// splitDocs splits a multi-document YAML stream, dropping empty documents.
func splitDocs(stream string) [][]byte {
	var docs [][]byte
	for _, d := range strings.Split("\n"+stream, "\n---") {
		// A "---" line may carry a comment after it; the document starts on the next line.
		if i := strings.IndexByte(d, '\n'); i >= 0 {
			d = d[i+1:]
		} else {
			d = ""
		}
		b := bytes.TrimSpace([]byte(d))
		if len(stripComments(b)) == 0 {
			continue
		}
		docs = append(docs, b)
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n"))
}

// podSpecs returns every pod template of the objects, by "Kind/name".
func podSpecs(objs []object) map[string]*corev1.PodSpec {
	specs := map[string]*corev1.PodSpec{}
	for _, o := range objs {
		key := o.Kind + "/" + o.Name
		switch v := o.Obj.(type) {
		case *appsv1.Deployment:
			specs[key] = &v.Spec.Template.Spec
		case *appsv1.StatefulSet:
			specs[key] = &v.Spec.Template.Spec
		case *batchv1.Job:
			specs[key] = &v.Spec.Template.Spec
		case *corev1.Pod:
			specs[key] = &v.Spec
		}
	}
	return specs
}

func find[T any](objs []object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.Obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestDecodeStrictRejectsUnknownFieldsAndKinds(t *testing.T) {
	cases := map[string]string{
		"unknownField":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n",
		"wrongType":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: {port: 80}\n",
		"duplicateKey":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n",
		"unknownKind":   "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x}\n",
		"noName":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		"crdTypo":       "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  endpoint: []\n",
		"containerTypo": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n    - name: a\n      image: b\n      readinessprobe: {}\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeStrict(name, []byte(doc)); err == nil {
				t.Fatal("decoded without an error")
			}
		})
	}
	if _, err := decodeStrict("ok", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")); err != nil {
		t.Fatalf("a valid ConfigMap: %v", err)
	}
}

func metav1LabelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}
