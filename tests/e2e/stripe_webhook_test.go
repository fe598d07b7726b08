package e2e

import (
	"strings"
	"testing"
)

// This suite has no Stripe settings: the webhook route, which GET /v2 lists,
// answers 404 not_found saying that Stripe is not configured here, not the
// generic "Route not found" that would read as a wrong URL.
func TestStripeWebhookNotConfigured(t *testing.T) {
	const path = "/v2/payments/stripe/webhook"
	var info struct {
		Routes []struct {
			Method string `json:"method"`
			Path   string `json:"path"`
		} `json:"routes"`
	}
	call(t, "GET", s.gateway+"/v2", "", "").into(t, &info)
	listed := false
	for _, r := range info.Routes {
		listed = listed || (r.Method == "POST" && r.Path == path)
	}
	if !listed {
		t.Fatalf("GET /v2 does not list POST %s", path)
	}

	body := `{"id":"evt_1","object":"event","api_version":"2026-03-25.dahlia","type":"checkout.session.completed",` +
		`"created":1767225600,"data":{"object":{"id":"cs_test_1","object":"checkout.session"}}}`
	sig := "t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"
	r := call(t, "POST", s.gateway+path, "", body, "Stripe-Signature", sig)
	if r.status != 404 || r.env.Error == nil || r.env.Error.Code != "not_found" ||
		!strings.Contains(r.env.Error.Message, "Stripe are not configured") {
		t.Fatalf("%d %s", r.status, r.raw)
	}
}
