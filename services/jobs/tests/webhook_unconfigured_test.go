package tests

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/payapp"
)

// Without Stripe settings cmd/jobs still mounts the webhook: it answers 404
// not_found saying so, whatever the request.
func TestStripeWebhookNotConfigured(t *testing.T) {
	t.Parallel()
	srv := web.New(webtest.Config(), testLog, "jobs")
	payapp.Routes(srv.App, payapp.Config{Log: testLog, Bus: newBus(baseURL, dirURL), Codec: codec})
	srv.Fallback()
	if err := checker.CheckRoutes(web.Routes(srv.App)); err != nil {
		t.Fatal(err)
	}
	pub := identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.9"}
	for name, body := range map[string]string{
		"event":   `{"id":"evt_1","object":"event","type":"checkout.session.completed","data":{"object":{}}}`,
		"garbage": "not json",
	} {
		r := do(t, srv.App, "POST", payapp.WebhookPath, body, &pub, "Stripe-Signature", "t=1,v1=00")
		if r.Status != 404 || r.Env.Error == nil || r.Env.Error.Code != web.CodeNotFound ||
			!strings.Contains(r.Env.Error.Message, "not configured") {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}
