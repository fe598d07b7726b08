package tests

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A client nobody on the project wrote: openapi-typescript generates types
// from the document the gateway serves, and api/ts-check/client.ts, an
// openapi-fetch program, must type-check against them with tsc --strict while
// its deliberately wrong requests (marked @ts-expect-error) must not. A
// document that types the create-job body as unknown, or lets numeric text
// stand for an integer, fails here.
func TestTypeScriptClientTypeChecks(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "tools", "npm", "node_modules")
	generator, tsc := filepath.Join(modules, ".bin", "openapi-typescript"), filepath.Join(modules, ".bin", "tsc")
	_, nodeErr := exec.LookPath("node")
	for _, missing := range []bool{nodeErr != nil, !exists(generator), !exists(tsc)} {
		if !missing {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatal("node, openapi-typescript and tsc are required in CI (make test runs make docs, which installs tools/npm)")
		}
		t.Skip("node or tools/npm/node_modules missing: npm ci --prefix tools/npm (make docs does it)")
	}

	g := startGateway(t, gatewayOpts{})
	resp, err := client.Get(g.base + "/v2/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/openapi.json: %d %v", resp.StatusCode, err)
	}

	// The program and its config beside the generated types, with the tools'
	// node_modules linked in so that "openapi-fetch" resolves.
	dir := t.TempDir()
	for _, f := range []string{"tsconfig.json", "client.ts"} {
		b, err := os.ReadFile(filepath.Join(root, "api", "ts-check", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil { //nolint:gosec // G703: two fixed names in the test's own temp dir
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), served, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		// Generous: tsc takes seconds alone, but CI shares two cores with the other packages' tests.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
		}
	}
	run(generator, "openapi.json", "--output", "api.d.ts")
	run(tsc, "--project", "tsconfig.json", "--noEmit", "--strict")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
