package tests

import (
	"slices"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The route table the gateway enforces and the OpenAPI document are the same
// API: every route is documented with the same access (public, or the same
// scopes) and with the errors the gateway itself answers on it (401/403 for
// keys, 429 where limited, 503/504 where proxied, 413/415 for bodies), and every
// documented operation is routed.
func TestRouteTableIsTheDocument(t *testing.T) {
	documented := map[string]bool{}
	for _, op := range checker.Operations() {
		documented[op.Method+" "+op.Path] = true
		i := slices.IndexFunc(routes.Table, func(r routes.Route) bool { return r.Method == op.Method && routes.DocPath(r.Path) == op.Path })
		if i < 0 {
			t.Errorf("%s %s (%s) is documented but not routed", op.Method, op.Path, op.ID)
			continue
		}
		r := routes.Table[i]
		if r.Public() != op.Public {
			t.Errorf("%s %s: routed public=%v, documented public=%v", op.Method, op.Path, r.Public(), op.Public)
		}
		if optional := r.KeyScopes != nil; optional != op.OptionalKey {
			t.Errorf("%s %s: routed optional key %v, documented %v", op.Method, op.Path, optional, op.OptionalKey)
		}
		want := slices.Sorted(slices.Values(append(slices.Clone(r.Scopes), r.KeyScopes...)))
		if !slices.Equal(want, op.Scopes) {
			t.Errorf("%s %s: routed scopes %v, documented %v", op.Method, op.Path, want, op.Scopes)
		}
		// The answers the gateway itself may give are documented, and only those.
		has := func(code string) bool { return slices.Contains(op.Statuses, code) }
		if (!r.Public() || r.KeyScopes != nil) && (!has("401") || !has("403")) {
			t.Errorf("%s %s needs a key but does not document 401 and 403: %v", op.Method, op.Path, op.Statuses)
		}
		if r.Public() && r.KeyScopes == nil && has("401") {
			t.Errorf("%s %s is public but documents 401", op.Method, op.Path)
		}
		if limited := r.Limit != routes.LimitNone; limited != has("429") {
			t.Errorf("%s %s: rate limited %v, 429 documented %v", op.Method, op.Path, limited, has("429"))
		}
		if r.Backend != "" && (!has("503") || !has("504")) {
			t.Errorf("%s %s is proxied to %s but does not document 503 and 504", op.Method, op.Path, r.Backend)
		}
		if op.Method == "POST" && (!has("413") || !has("415")) {
			t.Errorf("%s %s takes a body but does not document 413 and 415", op.Method, op.Path)
		}
	}
	for _, r := range routes.Table {
		if !documented[r.Method+" "+routes.DocPath(r.Path)] {
			t.Errorf("%s %s is routed but not documented", r.Method, r.Path)
		}
	}
}

// A compressed body is refused with the documented 415 before it is read (do
// checks the answer against the document).
func TestCompressedBodyGetsDocumented415(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}})
	for _, path := range []string{"/v2/jobs", "/v2/jobs/unpublish", "/v2/feedback"} {
		r := do(t, "POST", g.base+path, `{"job_id":1}`, map[string]string{
			"X-API-Key": raw, "Content-Type": "application/json", "Content-Encoding": "gzip"})
		if r.status != 415 || r.env.Error == nil || r.env.Error.Code != "unsupported_media_type" {
			t.Fatalf("POST %s gzip: %d %s", path, r.status, r.raw)
		}
	}
}
