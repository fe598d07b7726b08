package tests

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The CORS headers reach the browser on proxied answers too (the forwarded
// response used to replace them, so no backend's answer was readable
// cross-origin), and on the gateway's own answers and errors.
func TestCORSHeadersSurviveTheProxy(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v2/jobs", ""}, {"POST", "/v2/jobs", `{}`}, {"GET", "/v2/blog", ""}, {"GET", "/v2", ""}, {"GET", "/v2/nope", ""},
	} {
		r := do(t, tc.method, g.base+tc.path, tc.body, map[string]string{"X-API-Key": raw, "Origin": "https://board.example"})
		if r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s %s (%d): Access-Control-Allow-Origin %q", tc.method, tc.path, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
		if exp := r.header.Get("Access-Control-Expose-Headers"); !strings.Contains(exp, "X-RateLimit-Remaining") || !strings.Contains(exp, "Idempotent-Replayed") {
			t.Fatalf("%s %s: Access-Control-Expose-Headers %q", tc.method, tc.path, exp)
		}
	}
}
