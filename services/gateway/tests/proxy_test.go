package tests

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The backend receives a signed identity, never the key, and no client-forged
// identity or forwarding header.
func TestForwardedRequestCarriesIdentityNotKey(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	k, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read", "jobs:write"}, SpaceID: 42, TrustedImporter: true})
	var s seen
	r := do(t, "GET", g.base+"/v2/jobs?city=berlin&api_key="+raw+"&q=a%20b", "", map[string]string{
		identity.Header: "forged", "X-Forwarded-For": "6.6.6.6", "Cookie": "session=1",
	})
	r.data(t, &s)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	if s.Identity.KeyID != k.ID || s.Identity.SpaceID != 42 || !s.Identity.TrustedImporter || s.Identity.Kind != identity.KindLive {
		t.Fatalf("identity: %+v", s.Identity)
	}
	if strings.Contains(s.Query, "api_key") || s.Query != "city=berlin&q=a%20b" {
		t.Fatalf("query forwarded as %q", s.Query)
	}
	for h, v := range s.Headers {
		if strings.Contains(v, raw) || strings.EqualFold(h, "X-API-Key") || strings.EqualFold(h, "Authorization") || strings.EqualFold(h, "Cookie") {
			t.Fatalf("credential header reached the backend: %s: %s", h, v)
		}
	}
	if s.Headers["X-Forwarded-For"] == "6.6.6.6" || s.Identity.ClientIP == "6.6.6.6" {
		t.Fatal("client-supplied X-Forwarded-For was trusted")
	}
	if s.Identity.RequestID == "" || s.Identity.RequestID != r.header.Get("X-Request-ID") {
		t.Fatalf("request id %q vs %q", s.Identity.RequestID, r.header.Get("X-Request-ID"))
	}
	// Public routes carry a public identity.
	var pub seen
	do(t, "GET", g.base+"/v2/blog?limit=2", "", map[string]string{"X-API-Key": raw}).data(t, &pub)
	if pub.Identity.Kind != identity.KindPublic || pub.Identity.KeyID != 0 || pub.Identity.SpaceID != 0 {
		t.Fatalf("public identity: %+v", pub.Identity)
	}
}

func TestEnvelopesForUnknownWrongMethodAndBadJSON(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	key := map[string]string{"X-API-Key": raw}
	cases := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code, allow              string
	}{
		{"unknownPath404", "GET", "/v2/nope", "", nil, 404, "not_found", ""},
		{"unknownPathWithKey404", "GET", "/v2/nope", "", key, 404, "not_found", ""},
		{"outsideV2404", "GET", "/", "", nil, 404, "not_found", ""},
		{"jobsDelete405", "DELETE", "/v2/jobs", "", key, 405, "method_not_allowed", "GET, HEAD, POST"},
		{"unpublishGet405", "GET", "/v2/jobs/unpublish", "", nil, 405, "method_not_allowed", "POST"},
		{"feedbackGet405", "GET", "/v2/feedback", "", nil, 405, "method_not_allowed", "POST"},
		{"badJSON400", "POST", "/v2/jobs", `{"title":`, key, 400, "bad_request", ""},
		{"publicBadJSON400", "POST", "/v2/feedback", `not json`, nil, 400, "bad_request", ""},
		{"tooLarge413", "POST", "/v2/jobs", `{"t":"` + strings.Repeat("x", 70<<10) + `"}`, key, 413, "payload_too_large", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, g.base+tc.path, tc.body, tc.hdr)
			if r.status != tc.status || r.env.Success || r.env.Error.Code != tc.code {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			if tc.allow != "" && r.header.Get("Allow") != tc.allow {
				t.Fatalf("Allow %q, want %q", r.header.Get("Allow"), tc.allow)
			}
		})
	}
}

func TestBackendDownOrSlowAnswersQuickly(t *testing.T) {
	down := startGateway(t, gatewayOpts{backendURL: "http://127.0.0.1:1"})
	_, raw := down.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	start := time.Now()
	r := do(t, "GET", down.base+"/v2/jobs", "", map[string]string{"X-API-Key": raw})
	if r.status != 503 || r.env.Error.Code != "service_unavailable" {
		t.Fatalf("backend down: %d %s", r.status, r.raw)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("backend down: the gateway hung instead of answering")
	}

	slow := startGateway(t, gatewayOpts{timeout: 300 * time.Millisecond})
	_, raw = slow.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	r = do(t, "GET", slow.base+"/v2/jobs?sleep_ms=1500", "", map[string]string{"X-API-Key": raw})
	if r.status != 504 || r.env.Error.Code != "timeout" {
		t.Fatalf("backend slow: %d %s", r.status, r.raw)
	}
}

func TestInfoListsRouteTable(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	var info struct {
		Name       string `json:"name"`
		OpenAPIURL string `json:"openapi_url"`
		Routes     []struct {
			Method string   `json:"method"`
			Path   string   `json:"path"`
			Auth   string   `json:"auth"`
			Scopes []string `json:"scopes"`
			Write  bool     `json:"write"`
		} `json:"routes"`
	}
	do(t, "GET", g.base+"/v2", "", nil).data(t, &info)
	found := 0
	for _, want := range grants {
		for _, r := range info.Routes {
			if r.Method != want.method || r.Path != want.path {
				continue
			}
			found++
			if (want.scopes == nil) != (r.Auth == "public") || strings.Join(r.Scopes, ",") != strings.Join(want.scopes, ",") || r.Write != want.write {
				t.Fatalf("route %s %s listed as %+v", r.Method, r.Path, r)
			}
		}
	}
	if found != len(grants) || info.OpenAPIURL != "http://gateway.test/v2/openapi.json" {
		t.Fatalf("found %d of %d routes; openapi %q", found, len(grants), info.OpenAPIURL)
	}
}

func TestHealth(t *testing.T) { health(t, redisURL) }

// health checks /v2/health of a gateway on the Redis at url.
func health(t *testing.T, url string) {
	g := startGateway(t, gatewayOpts{redisURL: url})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	var h struct {
		Status      string `json:"status"`
		PHPVersion  string `json:"php_version"`
		MemoryUsage *int64 `json:"memory_usage"`
		Redis       struct {
			Status  string `json:"status"`
			Version string `json:"version"`
		} `json:"redis"`
		Services map[string]struct {
			Status string `json:"status"`
		} `json:"services"`
	}
	do(t, "GET", g.base+"/v2/health", "", map[string]string{"X-API-Key": raw}).data(t, &h)
	if h.Status != "ok" || !strings.HasPrefix(h.PHPVersion, "go") || h.MemoryUsage == nil || *h.MemoryUsage <= 0 ||
		h.Redis.Status != "connected" || h.Redis.Version == "" || len(h.Services) != 4 || h.Services["jobs"].Status != "up" {
		t.Fatalf("health: %+v", h)
	}
}

func TestOpenAPIServed(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	for path, want := range map[string]string{"/v2/openapi.json": `"openapi":"3.1.0"`, "/v2/openapi.yaml": "openapi: 3.1.0"} {
		resp, err := client.Get(g.base + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), want) {
			t.Fatalf("%s: %d %.100s", path, resp.StatusCode, raw)
		}
	}
}

// No log line ever carries an API key, whichever way it was sent.
func TestKeysNeverLogged(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	do(t, "GET", g.base+"/v2/jobs?api_key="+raw, "", nil)
	do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": raw})
	do(t, "GET", g.base+"/v2/nope?api_key="+raw, "", nil)
	do(t, "POST", g.base+"/v2/jobs?api_key="+raw, `{"x":`, nil)
	logs := g.logs.String()
	if !strings.Contains(logs, `"route":"/v2/jobs"`) {
		t.Fatalf("access log missing: %s", logs)
	}
	if strings.Contains(logs, raw) || strings.Contains(logs, raw[9:]) {
		t.Fatal("an API key was written to the logs")
	}
}
