package tests

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api"
)

// The reference page loads in a real headless browser, renders the bundled
// Redoc against the served document, and shows the operations.
func TestReferencePageRendersInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is required in CI (scripts/deps.sh installs it)")
		}
		t.Skip("chromium not installed; scripts/deps.sh installs it")
	}
	g := startGateway(t, gatewayOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--virtual-time-budget=15000", "--dump-dom", g.base+"/v2/docs")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	t.Logf("rendered DOM: %d bytes", len(dom))
	for _, want := range []string{"coworkjobs API", "List active jobs", "Create a job (or update its fingerprint match)", "Unpublish a job (the record is kept)", "List confirmed cities", "Subscribe to the newsletter (double opt-in)"} {
		if !strings.Contains(dom, want) {
			t.Fatalf("the rendered page does not show %q (%d bytes of DOM)", want, len(dom))
		}
	}
}

// The renderer is streamed from the embedded files on each request: every
// GET gets all of it, byte for byte, and HEAD its headers alone.
func TestRendererIsServedWhole(t *testing.T) {
	want, err := fs.ReadFile(api.Docs, "docs/redoc.standalone.js")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the renderer is not bundled (make docs runs before make test)")
		}
		t.Skip("the renderer is not bundled; make docs")
	}
	g := startGateway(t, gatewayOpts{})
	for range 3 {
		resp, err := client.Get(g.base + "/v2/docs/redoc.standalone.js")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Fatalf("GET renderer: %d, %s, %d of %d bytes, equal %v (%v)", resp.StatusCode, resp.Header.Get("Content-Type"),
				len(got), len(want), bytes.Equal(got, want), err)
		}
	}
	req, _ := http.NewRequest(http.MethodHead, g.base+"/v2/docs/redoc.standalone.js", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Fatalf("HEAD renderer: %d, Content-Length %q, %d body bytes", resp.StatusCode, resp.Header.Get("Content-Length"), len(body))
	}
}

// /v2/openapi.yaml is the document byte for byte; /v2/openapi.json holds the
// same with every key in the authored order (a map-based conversion sorted
// them, and generated types and the reference page followed).
func TestOpenAPIServedInAuthoredOrder(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	get := func(path string) []byte {
		resp, err := client.Get(g.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return b
	}
	if y := get("/v2/openapi.yaml"); !bytes.Equal(y, api.OpenAPIYAML) {
		t.Fatalf("/v2/openapi.yaml is not the authored document (%d of %d bytes)", len(y), len(api.OpenAPIYAML))
	}
	j := get("/v2/openapi.json")
	want, err := api.JSONFromYAML(api.OpenAPIYAML)
	if err != nil || !bytes.Equal(j, want) {
		t.Fatalf("/v2/openapi.json is not the ordered conversion (%v)", err)
	}
	// Orders a sorted conversion would invert: paths as authored, and the
	// create-job body's properties in the spec's table order.
	s := string(j)
	for _, seq := range [][]string{
		{`"openapi":`, `"info":`, `"paths":`, `"components":`},
		{`"/v2":`, `"/v2/health":`, `"/v2/openapi.json":`, `"/v2/docs":`, `"/v2/jobs":`},
		{`"JobCreateRequest":{"type":"object"`, `"title":{`, `"company":{`, `"description":{`, `"job_type":{`, `"tags":{`, `"id_city":{`},
	} {
		at := 0
		for _, k := range seq {
			i := strings.Index(s[at:], k)
			if i < 0 {
				t.Fatalf("%s is not after %s in the served JSON", k, seq[0])
			}
			at += i + len(k)
		}
	}
}

// /v2/docs/ (a trailing slash typed or linked by hand) is sent to the
// reference page instead of a 404.
func TestDocsTrailingSlashRedirects(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	noFollow := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, g.base+"/v2/docs/", nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/v2/docs" {
			t.Fatalf("%s /v2/docs/: %d Location %q", method, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, err := client.Get(g.base + "/v2/docs/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/v2/docs" || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable) {
		t.Fatalf("following /v2/docs/: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
}
