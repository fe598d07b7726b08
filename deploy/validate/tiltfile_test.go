package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// call is one Tilt builtin call the Tiltfile made.
type call struct {
	fn     string
	args   []starlark.Value
	kwargs map[string]starlark.Value
}

func (c call) arg(i int, name string) starlark.Value {
	if v, ok := c.kwargs[name]; ok {
		return v
	}
	if i >= 0 && i < len(c.args) {
		return c.args[i]
	}
	return nil
}

func str(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok {
		return string(s)
	}
	return ""
}

func strs(v starlark.Value) []string {
	switch x := v.(type) {
	case starlark.String:
		return []string{string(x)}
	case *starlark.List:
		var out []string
		for i := 0; i < x.Len(); i++ {
			out = append(out, str(x.Index(i)))
		}
		return out
	}
	return nil
}

// runTiltfile executes the Tiltfile with Tilt's builtins stubbed: each stub
// records its call and returns a placeholder, so the file's own logic (loops,
// string formatting) runs for real and every path it computes is seen.
func runTiltfile(t *testing.T) []call {
	t.Helper()
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "Tiltfile"))
	if err != nil {
		t.Fatal(err)
	}
	var calls []call
	stub := func(name string) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			c := call{fn: name, args: args, kwargs: map[string]starlark.Value{}}
			for _, kv := range kwargs {
				c.kwargs[string(kv[0].(starlark.String))] = kv[1]
			}
			calls = append(calls, c)
			return starlark.String("<" + name + ">"), nil
		})
	}
	predeclared := starlark.StringDict{
		"TRIGGER_MODE_AUTO":   starlark.MakeInt(0),
		"TRIGGER_MODE_MANUAL": starlark.MakeInt(1),
	}
	// The Tilt builtins this Tiltfile may use (https://docs.tilt.dev/api.html).
	for _, name := range []string{"docker_build", "custom_build", "k8s_yaml", "k8s_resource", "helm", "kustomize",
		"local_resource", "local", "sync", "run", "fall_back_on", "link", "update_settings", "watch_settings",
		"allow_k8s_contexts", "default_registry", "read_file", "port_forward"} {
		predeclared[name] = stub(name)
	}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	thread := &starlark.Thread{Name: "Tiltfile", Load: func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
		return nil, fmt.Errorf("load(%q): the Tiltfile uses no extensions", module)
	}}
	if _, err := starlark.ExecFileOptions(opts, thread, "Tiltfile", src, predeclared); err != nil {
		t.Fatalf("Tiltfile: %v", err)
	}
	return calls
}

var cmdPath = regexp.MustCompile(`(?:^|\s)((?:\./|tilt/|services/|charts/|k8s/)[^\s]+)`)

func TestTiltfile(t *testing.T) {
	root := repoRoot(t)
	calls := runTiltfile(t)
	exists := func(what, p string) {
		t.Helper()
		if p == "" {
			t.Errorf("%s: empty path", what)
			return
		}
		if filepath.IsAbs(p) {
			t.Errorf("%s: absolute path %s", what, p)
			return
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %s does not exist", what, p)
		}
	}

	images := map[string]bool{}
	resources := map[string]call{}
	forwards := map[string]bool{}
	buildOutputs := map[string]bool{}
	for _, c := range calls {
		switch c.fn {
		case "kustomize":
			exists("kustomize", str(c.arg(0, "paths")))
		case "helm":
			exists("helm chart", str(c.arg(0, "paths")))
			for _, v := range strs(c.arg(-1, "values")) {
				exists("helm values", v)
			}
		case "k8s_yaml":
			for _, p := range strs(c.arg(0, "yaml")) {
				if !strings.HasPrefix(p, "<") { // a file, not a helm()/kustomize() result
					exists("k8s_yaml", p)
				}
			}
		case "local_resource":
			name := str(c.arg(0, "name"))
			for _, d := range strs(c.arg(-1, "deps")) {
				exists("local_resource "+name+" deps", d)
			}
			for _, m := range cmdPath.FindAllStringSubmatch(str(c.arg(1, "cmd")), -1) {
				p := strings.TrimSuffix(strings.TrimSuffix(m[1], "/..."), "/")
				if strings.HasPrefix(p, "tilt/build/") {
					buildOutputs[p] = true // written by the command itself
					continue
				}
				exists("local_resource "+name+" cmd", p)
			}
			resources[name] = c
		case "docker_build":
			ref := str(c.arg(0, "ref"))
			images[ref] = true
			ctx := str(c.arg(1, "context"))
			exists("docker_build "+ref+" context", ctx)
			exists("docker_build "+ref+" dockerfile", str(c.arg(-1, "dockerfile")))
			for _, o := range strs(c.arg(-1, "only")) {
				p := filepath.Join(ctx, o)
				if strings.HasPrefix(p, "tilt/build/") {
					if !buildOutputs[p] {
						t.Errorf("docker_build %s: %s is not what a local_resource builds", ref, p)
					}
					continue
				}
				exists("docker_build "+ref+" only", p)
			}
			if lu, ok := c.arg(-1, "live_update").(*starlark.List); !ok || lu.Len() == 0 {
				t.Errorf("docker_build %s: no live update", ref)
			}
		case "sync":
			local := str(c.arg(0, "local_path"))
			if !buildOutputs[local] {
				exists("sync", local)
			}
		case "k8s_resource":
			name := str(c.arg(0, "workload"))
			resources[name] = c
			if len(strs(c.arg(-1, "labels"))) == 0 {
				t.Errorf("k8s_resource %s: no labels", name)
			}
			for _, f := range strs(c.arg(-1, "port_forwards")) {
				forwards[strings.SplitN(f, ":", 2)[0]] = true
			}
		}
	}
	for _, p := range []string{"8080", "3000", "16686"} {
		if !forwards[p] {
			t.Errorf("no port forward for %s", p)
		}
	}
	if _, ok := resources["seed"]; !ok {
		t.Error("no seed resource")
	}

	// Every workload of the dev chart and of k8s/ is a labelled resource, and
	// every image the chart asks for is built by Tilt (nothing is pulled from
	// a registry that has no such image).
	workloads := map[string]bool{}
	for _, d := range find[*appsv1.Deployment](render(t, filepath.Join(root, "tilt", "values-dev.yaml")).objs) {
		workloads[d.Name] = true
		for _, c := range d.Spec.Template.Spec.Containers {
			ref := c.Image
			if i := strings.LastIndex(ref, ":"); i > 0 {
				ref = ref[:i]
			}
			if !images[ref] {
				t.Errorf("%s runs %s, which the Tiltfile does not build", d.Name, c.Image)
			}
			if len(c.Command) < 2 || c.Command[0] != "/tilt/run.sh" {
				t.Errorf("%s: command %v does not go through the restart loop", d.Name, c.Command)
			}
		}
	}
	devChart := render(t, filepath.Join(root, "tilt", "values-dev.yaml")).objs
	chartConfigMaps := map[string]bool{}
	for _, c := range find[*corev1.ConfigMap](devChart) {
		chartConfigMaps[c.Name] = true
	}
	for _, d := range find[*appsv1.Deployment](build(t, filepath.Join(root, "k8s", "overlays", "dev"))) {
		workloads[d.Name] = true
		// An optional ConfigMap volume in k8s/ is the chart's (Grafana's dashboards).
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional && !chartConfigMaps[v.ConfigMap.Name] {
				t.Errorf("%s mounts ConfigMap %s, which the dev chart does not render", d.Name, v.ConfigMap.Name)
			}
		}
	}
	for w := range workloads {
		if _, ok := resources[w]; !ok {
			t.Errorf("workload %s has no k8s_resource (labels, dependencies)", w)
		}
	}
	for name, c := range resources {
		if c.fn == "k8s_resource" && !workloads[name] {
			t.Errorf("k8s_resource %s names no workload", name)
		}
		for _, dep := range strs(c.arg(-1, "resource_deps")) {
			if _, ok := resources[dep]; !ok {
				t.Errorf("%s depends on unknown resource %s", name, dep)
			}
		}
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "tilt", "Dockerfile.dev"))
	if err != nil || !strings.Contains(string(dockerfile), "/tilt/") {
		t.Error("tilt/Dockerfile.dev does not install the restart loop in /tilt/")
	}
	if !slices.ContainsFunc(calls, func(c call) bool { return c.fn == "run" && str(c.arg(0, "cmd")) == "/tilt/restart.sh" }) {
		t.Error("live update does not restart the process")
	}
}

func TestTiltfileStubRejectsUnknownNames(t *testing.T) {
	// The stubbed environment is strict: a misspelt builtin fails to run.
	_, err := starlark.ExecFileOptions(&syntax.FileOptions{TopLevelControl: true}, &starlark.Thread{}, "x", "k8s_yml('a')", starlark.StringDict{})
	if err == nil {
		t.Fatal("an undefined builtin was accepted")
	}
}
