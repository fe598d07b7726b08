package tests

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The HTML pages are not the API: no other site may read them (the poster's
// pages carry the edit hash and the forms' tokens), so they carry no CORS
// headers, preflight included; the API's routes keep theirs.
func TestPagesHaveNoCORS(t *testing.T) {
	g := startGateway(t, gatewayOpts{backendURL: startPagesBackend(t)})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	const origin = "https://board.example"
	for _, tc := range []struct{ method, path string }{
		{"GET", "/jobs/some-job-3"}, {"GET", "/jobs/edit?job=abc123"}, {"HEAD", "/jobs/some-job-3"}, {"POST", "/jobs/unpublish"},
		{"OPTIONS", "/jobs/edit"},
	} {
		hdr := []string{"Origin", origin}
		if tc.method == "OPTIONS" {
			hdr = append(hdr, "Access-Control-Request-Method", "POST")
		}
		r := pageReq(t, tc.method, g.base+tc.path, "", hdr...)
		if v := r.header.Values("Access-Control-Allow-Origin"); len(v) != 0 || r.header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("%s %s (%d): CORS headers %v", tc.method, tc.path, r.status, r.header)
		}
	}
	// The API on the same gateway (the pages' backend answers its vine feed),
	// and its job list on one whose backend answers every API route.
	api := startGateway(t, gatewayOpts{})
	_, apiKey := api.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	for _, tc := range []struct{ base, key, path string }{
		{g.base, raw, "/v2/vine/jobs"}, {g.base, raw, "/v2"}, {api.base, apiKey, "/v2/jobs"},
	} {
		r := do(t, "GET", tc.base+tc.path, "", map[string]string{"X-API-Key": tc.key, "Origin": origin})
		if r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("GET %s (%d): Access-Control-Allow-Origin %q", tc.path, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
}
