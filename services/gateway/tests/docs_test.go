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
