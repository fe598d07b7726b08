package tests

import (
	"io"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Stripe signs the exact bytes it sends: the gateway must relay the body and
// the Stripe-Signature header unchanged, without a key and without a budget.
func TestStripeWebhookRelayedUnchanged(t *testing.T) {
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Kind        string `json:"kind"`
		Body        string `json:"body"`
		Signature   string `json:"signature"`
		ContentType string `json:"content_type"`
	}
	srv := web.New(webConfig(), logx.NewTo(io.Discard, "jobs", "error"), "jobs")
	srv.App.Post("/v2/payments/stripe/webhook", codec.Middleware(), func(c *fiber.Ctx) error {
		c.Set(echoHeader, "jobs")
		return web.OK(c, 200, got{Kind: identity.From(c).Kind, Body: string(c.Body()),
			Signature: c.Get("Stripe-Signature"), ContentType: c.Get(fiber.HeaderContentType)})
	})
	g := startGateway(t, gatewayOpts{backendURL: listen(t, srv)})

	// Stripe's own layout: pretty-printed, escaped and non-ASCII text, a
	// trailing newline; any re-encoding would break the signature.
	body := "{\n  \"id\": \"evt_1\",\n  \"object\": \"event\",\n  \"type\": \"checkout.session.completed\",\n" +
		"  \"data\": {\"object\": {\"name\": \"Caf\u00e9 \\u00e9 \\\"q\\\" a/b\"}}\n}\n"
	sig := "t=1767225600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=abc"
	r := do(t, "POST", g.base+"/v2/payments/stripe/webhook", body, map[string]string{
		"Stripe-Signature": sig, "Content-Type": "application/json; charset=utf-8", "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)"})
	var seen got
	r.data(t, &seen)
	if r.status != 200 || seen.Body != body || seen.Signature != sig || seen.ContentType != "application/json; charset=utf-8" {
		t.Fatalf("%d: backend saw %+v", r.status, seen)
	}
	if seen.Kind != identity.KindPublic {
		t.Fatalf("identity kind %q, want public", seen.Kind)
	}
	for h := range r.header {
		if strings.HasPrefix(strings.ToLower(h), "x-ratelimit") {
			t.Fatalf("the webhook is counted against a budget: %s", h)
		}
	}
}
