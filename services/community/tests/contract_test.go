package tests

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Every /v2 route the community service serves is described by api/openapi.yaml
// (what the helpers' contract checks cannot see: a route nobody documented).
func TestServedRoutesAreDocumented(t *testing.T) {
	if err := checker.CheckRoutes(web.Routes(svc.Server.App)); err != nil {
		t.Fatal(err)
	}
}
