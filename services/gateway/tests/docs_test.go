package tests

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
