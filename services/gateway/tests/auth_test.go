package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The spec's Auth column, restated independently of the gateway's table:
// which scopes grant each route family.
var grants = []struct {
	method, path string
	scopes       []string // nil: public
	write        bool
}{
	{"GET", "/v2/jobs", []string{"jobs:read", "jobs:write", "read", "write"}, false},
	{"POST", "/v2/jobs", []string{"jobs:write", "write"}, true},
	{"POST", "/v2/jobs/unpublish", []string{"jobs:write", "write"}, true},
	{"GET", "/v2/cities", []string{"cities:read", "read", "write"}, false},
	{"GET", "/v2/spaces", []string{"spaces:read", "read", "write"}, false},
	{"GET", "/v2/city_spaces", []string{"spaces:read", "read", "write"}, false},
	{"GET", "/v2/events", []string{"events:read", "read", "write"}, false},
	{"GET", "/v2/health", []string{"read", "write"}, false},
	{"GET", "/v2/blog", nil, false},
	{"GET", "/v2/vine/jobs", nil, false},
	{"POST", "/v2/feedback", nil, false},
}

var ways = map[string]func(key string) (query string, hdr map[string]string){
	"x-api-key": func(k string) (string, map[string]string) { return "", map[string]string{"X-API-Key": k} },
	"bearer": func(k string) (string, map[string]string) {
		return "", map[string]string{"Authorization": "Bearer " + k}
	},
	"query": func(k string) (string, map[string]string) { return "?api_key=" + k, nil },
}

func TestAuthMatrix(t *testing.T) {
	g := startGateway(t, gatewayOpts{publicLimit: 10_000})
	for _, restricted := range []bool{false, true} {
		for _, scope := range keybus.AllScopes {
			_, raw := g.newKey(t, keybus.NewKey{Restricted: restricted, Scopes: []string{scope}})
			for wayName, way := range ways {
				for _, r := range grants {
					want := 200
					switch {
					case r.scopes == nil:
						want = 200
					case !slices.Contains(r.scopes, scope):
						want = 403
					case r.write && restricted:
						want = 403
					}
					if r.method == "POST" && want == 200 {
						want = 201
					}
					name := fmt.Sprintf("%s/rstr=%t/%s/%s_%s", wayName, restricted, scope, r.method, r.path)
					t.Run(name, func(t *testing.T) {
						q, hdr := way(raw)
						body := ""
						if r.method == "POST" {
							body = `{"job_id":1}`
						}
						resp := do(t, r.method, g.base+r.path+q, body, hdr)
						if resp.status != want {
							t.Fatalf("status %d, want %d: %s", resp.status, want, resp.raw)
						}
						if want == 403 && resp.env.Error.Code != "forbidden" {
							t.Fatalf("code %s", resp.env.Error.Code)
						}
					})
				}
			}
		}
	}
}

func TestUnauthorized(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	revokedKey, revoked := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	if err := g.keys.Revoke(context.Background(), revokedKey.ID); err != nil {
		t.Fatal(err)
	}
	unknown, _ := keybus.Generate(keybus.PrefixLive)
	cases := map[string]map[string]string{
		"missing":             nil,
		"revoked":             {"X-API-Key": revoked},
		"unknownWellFormed":   {"X-API-Key": unknown},
		"wrongPrefix":         {"X-API-Key": "sk_live_" + strings.Repeat("a", 40)},
		"tooShort":            {"X-API-Key": "svc_live_abc"},
		"badCharacters":       {"X-API-Key": "svc_live_" + strings.Repeat("!", 40)},
		"basicScheme":         {"Authorization": "Basic dXNlcjpwYXNz"},
		"emptyBearer":         {"Authorization": "Bearer "},
		"revokedViaBearer":    {"Authorization": "Bearer " + revoked},
		"headerWinsOverQuery": {"X-API-Key": unknown},
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			path := "/v2/jobs"
			if name == "headerWinsOverQuery" {
				_, good := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
				path += "?api_key=" + good
			}
			for _, method := range []string{"GET", "POST"} {
				resp := do(t, method, g.base+path, `{}`, hdr)
				if resp.status != 401 || resp.env.Error.Code != "unauthorized" || resp.env.Success {
					t.Fatalf("%s: status %d: %s", method, resp.status, resp.raw)
				}
				if resp.header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			}
		})
	}
}

// When several ways are used, X-API-Key wins over Authorization, which wins
// over the query parameter (documented in the OpenAPI description).
func TestKeyPrecedence(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	header, headerRaw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	bearer, bearerRaw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	_, queryRaw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	var s seen
	do(t, "GET", g.base+"/v2/jobs?api_key="+queryRaw, "", map[string]string{"X-API-Key": headerRaw, "Authorization": "Bearer " + bearerRaw}).data(t, &s)
	if s.Identity.KeyID != header.ID {
		t.Fatalf("X-API-Key did not win: key %d", s.Identity.KeyID)
	}
	do(t, "GET", g.base+"/v2/jobs?api_key="+queryRaw, "", map[string]string{"Authorization": "Bearer " + bearerRaw}).data(t, &s)
	if s.Identity.KeyID != bearer.ID {
		t.Fatalf("Bearer did not win over query: key %d", s.Identity.KeyID)
	}
}

func TestRevocationTakesEffect(t *testing.T) {
	g := startGateway(t, gatewayOpts{cacheTTL: 0})
	k, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	if r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": raw}); r.status != 200 {
		t.Fatalf("before revoke: %d", r.status)
	}
	if err := g.keys.Revoke(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": raw}); r.status != 401 {
		t.Fatalf("after revoke: %d", r.status)
	}
}

func TestRotateReplacesKey(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	k, oldRaw := g.newKey(t, keybus.NewKey{Scopes: []string{"read", "jobs:write"}, SpaceID: 9, RateLimitPerMinute: 7})
	nk, newRaw, err := g.keys.Rotate(context.Background(), k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if nk.SpaceID != 9 || nk.RateLimitPerMinute != 7 || !slices.Equal(nk.Scopes, []string{"jobs:write", "read"}) {
		t.Fatalf("replacement lost settings: %+v", nk)
	}
	if r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": oldRaw}); r.status != 401 {
		t.Fatalf("old key: %d", r.status)
	}
	var s seen
	r := do(t, "GET", g.base+"/v2/jobs", "", map[string]string{"X-API-Key": newRaw})
	r.data(t, &s)
	if r.status != 200 || s.Identity.KeyID != nk.ID || s.Identity.SpaceID != 9 {
		t.Fatalf("new key: %d %+v", r.status, s.Identity)
	}
	if _, _, err := g.keys.Rotate(context.Background(), k.ID); err == nil {
		t.Fatal("rotating a revoked key succeeded")
	}
}

// Keys are stored only as hashes: nothing in the table contains the key.
func TestKeysStoredHashedOnly(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	var n int
	err := testPool.QueryRow(context.Background(),
		`SELECT count(*) FROM api_keys WHERE row_to_json(api_keys)::text LIKE '%' || $1 || '%'`, raw[9:]).Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("key text found in storage: %d rows, %v", n, err)
	}
}
