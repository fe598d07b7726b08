package tests

import (
	"io"
	"net/http"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// HEAD on a GET route is authenticated and forwarded like the GET and
// answers its status and headers without a body; a path without GET has no
// HEAD either.
func TestHeadFollowsTheGetRoute(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read", "jobs:write"}})
	head := func(path, key string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodHead, g.base+path, nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	if r, body := head("/v2/jobs", raw); r.StatusCode != 200 || len(body) != 0 || r.Header.Get("X-Request-ID") == "" {
		t.Fatalf("HEAD with a read key: %d %v %q", r.StatusCode, r.Header, body)
	}
	if r, _ := head("/v2/jobs", ""); r.StatusCode != 401 {
		t.Fatalf("HEAD without a key: %d", r.StatusCode)
	}
	if r, _ := head("/v2/jobs/unpublish", raw); r.StatusCode != 405 || r.Header.Get("Allow") != "POST" {
		t.Fatalf("HEAD on a POST-only route: %d Allow %q", r.StatusCode, r.Header.Get("Allow"))
	}
}
