package tests

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Expect: 100-continue is between the client and the gateway: the backend
// never sees it, and the request is answered normally with or without a body.
func TestExpectContinueNotForwarded(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	for _, tc := range []struct{ method, body string }{{"GET", ""}, {"POST", `{"title":"x"}`}} {
		r := do(t, tc.method, g.base+"/v2/jobs", tc.body, map[string]string{"X-API-Key": raw, "Expect": "100-continue", "Content-Type": "application/json"})
		var s seen
		r.data(t, &s)
		if r.status >= 300 {
			t.Fatalf("%s with Expect: %d %s", tc.method, r.status, r.raw)
		}
		for h := range s.Headers {
			if strings.EqualFold(h, "Expect") {
				t.Fatalf("%s: Expect reached the backend", tc.method)
			}
		}
	}
}
