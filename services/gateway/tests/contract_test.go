package tests

import (
	"slices"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/gatewayapp"
)

// The route table the gateway enforces and the OpenAPI document are the same
// API: every route is documented with the same access (public, or the same
// scopes), and every documented operation is routed.
func TestRouteTableIsTheDocument(t *testing.T) {
	documented := map[string]bool{}
	for _, op := range checker.Operations() {
		documented[op.Method+" "+op.Path] = true
		i := slices.IndexFunc(gatewayapp.Table, func(r gatewayapp.Route) bool { return r.Method == op.Method && r.Path == op.Path })
		if i < 0 {
			t.Errorf("%s %s (%s) is documented but not routed", op.Method, op.Path, op.ID)
			continue
		}
		r := gatewayapp.Table[i]
		if r.Public() != op.Public {
			t.Errorf("%s %s: routed public=%v, documented public=%v", op.Method, op.Path, r.Public(), op.Public)
		}
		want := slices.Sorted(slices.Values(r.Scopes))
		if !slices.Equal(want, op.Scopes) {
			t.Errorf("%s %s: routed scopes %v, documented %v", op.Method, op.Path, want, op.Scopes)
		}
	}
	for _, r := range gatewayapp.Table {
		if !documented[r.Method+" "+r.Path] {
			t.Errorf("%s %s is routed but not documented", r.Method, r.Path)
		}
	}
}
