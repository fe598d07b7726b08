package tests

import (
	"strconv"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// POST /v2/alerts takes an optional key: none is the public path (a public
// identity, the per-IP budget); a key sent must be valid (401), live and
// hold alerts:write (403), and then the backend is told of it and the key's
// own write limit applies. The refusals are the document's (do checks them).
func TestAlertsOptionalKey(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	const body = `{"email":"mia@example.com","q":"barista"}`
	json := map[string]string{"Content-Type": "application/json"}
	with := func(h, v string) map[string]string {
		return map[string]string{"Content-Type": "application/json", h: v}
	}

	var pub seen
	r := do(t, "POST", g.base+"/v2/alerts", body, json)
	r.data(t, &pub)
	if r.status != 201 || pub.Identity.Kind != identity.KindPublic || pub.Identity.KeyID != 0 {
		t.Fatalf("no key: %d %+v", r.status, pub.Identity)
	}
	if p := r.header.Get("RateLimit-Policy"); !strings.Contains(p, `"public_ip"`) {
		t.Fatalf("no key: policy %q, want the per-IP budget", p)
	}

	platform, raw := g.newKey(t, keybus.NewKey{Scopes: []string{keybus.ScopeAlertsWrite}, RateLimitPerMinute: 9})
	for _, hdr := range []map[string]string{with("X-API-Key", raw), with("Authorization", "Bearer "+raw)} {
		var s seen
		r := do(t, "POST", g.base+"/v2/alerts", body, hdr)
		r.data(t, &s)
		if r.status != 201 || s.Identity.KeyID != platform.ID || s.Identity.Kind != identity.KindLive {
			t.Fatalf("platform key: %d %+v", r.status, s.Identity)
		}
		if r.header.Get("X-RateLimit-Limit") != strconv.Itoa(9) {
			t.Fatalf("platform key: limit %q, want the key's 9", r.header.Get("X-RateLimit-Limit"))
		}
	}
	var s seen
	do(t, "POST", g.base+"/v2/alerts?api_key="+raw, body, json).data(t, &s)
	if s.Identity.KeyID != platform.ID {
		t.Fatalf("?api_key: %+v", s.Identity)
	}

	_, noScope := g.newKey(t, keybus.NewKey{Scopes: []string{keybus.ScopeWrite, keybus.ScopeJobsWrite}})
	_, restricted := g.newKey(t, keybus.NewKey{Scopes: []string{keybus.ScopeAlertsWrite}, Restricted: true})
	revokedKey, revoked := g.newKey(t, keybus.NewKey{Scopes: []string{keybus.ScopeAlertsWrite}})
	if err := g.keys.Revoke(t.Context(), revokedKey.ID); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"a key without alerts:write":      {with("X-API-Key", noScope), 403},
		"a restricted key with the scope": {with("X-API-Key", restricted), 403},
		"a revoked key":                   {with("X-API-Key", revoked), 401},
		"a made-up key":                   {with("X-API-Key", "svc_live_"+randomHex(20)), 401},
		"another scheme":                  {with("Authorization", "Basic YTpi"), 401},
	} {
		if r := do(t, "POST", g.base+"/v2/alerts", body, c.hdr); r.status != c.want || r.header.Get(echoHeader) != "" {
			t.Errorf("%s: %d %s, want %d from the gateway", name, r.status, r.raw, c.want)
		}
	}
	// The other alert routes stay public: a key there is not read.
	var other seen
	do(t, "GET", g.base+"/v2/alerts/manage?token=1.x", "", with("X-API-Key", revoked)).data(t, &other)
	if other.Identity.Kind != identity.KindPublic {
		t.Fatalf("manage with a key: %+v", other.Identity)
	}
}
