package validate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// runningCluster is a lookup that sees the release's running Deployments,
// as `helm upgrade` does; every other lookup finds nothing.
type runningCluster struct{ client dynamic.Interface }

func newRunningCluster(t *testing.T, replicas map[string]int32) runningCluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for component, n := range replicas {
		objs = append(objs, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name(component), Namespace: namespace},
			Spec:       appsv1.DeploymentSpec{Replicas: &n},
		})
	}
	return runningCluster{dynamicfake.NewSimpleDynamicClient(scheme, objs...)}
}

func (c runningCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	if apiVersion == "apps/v1" && kind == "Deployment" {
		gvr = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	}
	return c.client.Resource(gvr), true, nil
}

func jobsAutoscaling(enabled bool) map[string]any {
	return map[string]any{"apis": map[string]any{"jobs": map[string]any{"replicaCount": 3,
		"autoscaling": map[string]any{"enabled": enabled}}}}
}

// Under an HPA the Deployment has no count of the chart's: without one,
// replicaCount; and `helm upgrade` turning the HPA on keeps the running
// count, where a field left out would be deleted by Helm's patch and
// defaulted to one pod.
func TestChartReplicasUnderHPA(t *testing.T) {
	replicas := func(t *testing.T, values map[string]any, cluster *runningCluster) *int32 {
		t.Helper()
		var r rendered
		if cluster == nil {
			r = renderValues(t, "values", values)
		} else {
			out, err := renderChart(t, values, *cluster)
			if err != nil {
				t.Fatal(err)
			}
			r = decodeRendered(t, out)
		}
		d := deployments(r.objs)["jobs"]
		if d == nil {
			t.Fatal("no jobs Deployment")
		}
		return d.Spec.Replicas
	}

	t.Run("template", func(t *testing.T) {
		if n := replicas(t, jobsAutoscaling(true), nil); n != nil {
			t.Errorf("HPA on: the jobs Deployment sets replicas %d", *n)
		}
		if n := replicas(t, jobsAutoscaling(false), nil); n == nil || *n != 3 {
			t.Errorf("HPA off: replicas %v, want replicaCount 3", n)
		}
	})

	t.Run("upgradeKeepsTheRunningCount", func(t *testing.T) {
		cluster := newRunningCluster(t, map[string]int32{"jobs": 5})
		if n := replicas(t, jobsAutoscaling(true), &cluster); n == nil || *n != 5 {
			t.Errorf("HPA on over 5 running pods: replicas %v, want 5", n)
		}
		if n := replicas(t, jobsAutoscaling(false), &cluster); n == nil || *n != 3 {
			t.Errorf("HPA off: replicas %v, want replicaCount 3", n)
		}
	})

	t.Run("installRendersNone", func(t *testing.T) {
		cluster := newRunningCluster(t, nil)
		if n := replicas(t, jobsAutoscaling(true), &cluster); n != nil {
			t.Errorf("HPA on, no Deployment yet: replicas %d", *n)
		}
	})
}
