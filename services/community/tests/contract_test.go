package tests

import (
	"strings"
	"testing"
)

// Every /v2 route the community service serves is described by api/openapi.yaml
// (what the helpers' contract checks cannot see: a route nobody documented).
func TestServedRoutesAreDocumented(t *testing.T) {
	var routes []string
	for _, r := range srv.App.GetRoutes(true) {
		if strings.HasPrefix(r.Path, "/v2/") {
			routes = append(routes, r.Method+" "+r.Path)
		}
	}
	if len(routes) == 0 {
		t.Fatal("the app serves no /v2 route")
	}
	if missing := checker.Undocumented(routes); len(missing) > 0 {
		t.Fatalf("served but not in api/openapi.yaml: %v", missing)
	}
}
