package api_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/coworkjobs/coworkjobs/api"
)

// keysOf returns the keys of the object at path in a JSON document, in the
// order they are written.
func keysOf(t *testing.T, doc []byte, path ...string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	var keys []string
	var walk func(depth int) // reads one value; collects keys at the end of path
	walk = func(depth int) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return
		}
		for dec.More() {
			if d == '[' {
				walk(-1)
				continue
			}
			k, _ := dec.Token()
			key := k.(string)
			if depth == len(path) {
				keys = append(keys, key)
			}
			next := -1
			if depth >= 0 && depth < len(path) && key == path[depth] {
				next = depth + 1
			}
			walk(next)
		}
		_, _ = dec.Token()
	}
	walk(0)
	return keys
}

// yamlKeysOf is keysOf for the YAML as authored.
func yamlKeysOf(t *testing.T, doc []byte, path ...string) []string {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	n := root.Content[0]
	for _, p := range path {
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			t.Fatalf("no %q in the YAML", p)
		}
		n = next
	}
	var keys []string
	for i := 0; i < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// The JSON form keeps the authored key order everywhere a reader or a
// generator sees it, and holds exactly what the YAML holds.
func TestJSONFromYAMLKeepsTheAuthoredOrder(t *testing.T) {
	j, err := api.JSONFromYAML(api.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range [][]string{
		{},
		{"paths"},
		{"paths", "/v2/jobs", "post"},
		{"components", "schemas"},
		{"components", "schemas", "JobCreateRequest", "properties"},
		{"components", "schemas", "Job", "properties"},
	} {
		want, got := yamlKeysOf(t, api.OpenAPIYAML, path...), keysOf(t, j, path...)
		if len(want) < 3 || !slices.Equal(got, want) {
			t.Errorf("keys of %v:\n got %v\nwant %v", path, got, want)
		}
		if slices.IsSorted(want) {
			t.Errorf("keys of %v are authored sorted: this case cannot tell the orders apart", path)
		}
	}

	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(api.OpenAPIYAML, &fromYAML); err != nil {
		t.Fatal(err)
	}
	viaMap, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	_ = json.Unmarshal(viaMap, &want)
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if !reflect.DeepEqual(fromJSON, want) {
		t.Fatal("the ordered JSON does not hold what the YAML holds")
	}
}

func TestJSONFromYAMLScalars(t *testing.T) {
	for in, want := range map[string]string{
		"b: 1\na: [1.0, 0x1F, -2, 1e3]":                `{"b":1,"a":[1.0,31,-2,1e3]}`,
		"z: ~\ny: true\nx: 'yes'\nw: 2026-11-20":       `{"z":null,"y":true,"x":"yes","w":"2026-11-20"}`,
		"html: '<p>a & b</p>'\n\"200\": ok\n404: gone": `{"html":"<p>a & b</p>","200":"ok","404":"gone"}`,
		"base: &b {q: 1}\nuse: *b":                     `{"base":{"q":1},"use":{"q":1}}`,
		"s: \"line\\nnext \\\"q\\\"\"":                 `{"s":"line\nnext \"q\""}`,
	} {
		got, err := api.JSONFromYAML([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%q:\n got %s (%v)\nwant %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"a: .inf", "a: [", "<<: {a: 1}\nb: 2"} {
		if got, err := api.JSONFromYAML([]byte(bad)); err == nil {
			t.Errorf("%q converted to %s", bad, got)
		}
	}
}

// The gateway converts once at start; this keeps that start cheap.
func BenchmarkJSONFromYAML(b *testing.B) {
	for b.Loop() {
		if _, err := api.JSONFromYAML(api.OpenAPIYAML); err != nil {
			b.Fatal(err)
		}
	}
}
