package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// hookKey is a live key with webhooks:manage (the gateway checks the scope).
func hookKey(keyID, spaceID int64) identity.Identity {
	return identity.Identity{Kind: identity.KindLive, KeyID: keyID, SpaceID: spaceID, Scopes: []string{"webhooks:manage"}}
}

type endpoint struct {
	ID             int64    `json:"id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabled_reason"`
	Secret         string   `json:"secret"`
	PreviousUntil  *string  `json:"previous_secret_until"`
	Email          *string  `json:"email"`
}

func createHook(t *testing.T, id identity.Identity, body string) endpoint {
	t.Helper()
	r := do(t, appFlat, "POST", "/v2/webhooks", body, &id)
	if r.Status != 201 {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	var e endpoint
	r.data(t, &e)
	return e
}

func TestWebhookEndpointsCRUD(t *testing.T) {
	t.Parallel()
	key := hookKey(3600, 1360)
	e := createHook(t, key, `{"url":"https://example.com/hooks","events":["job.published","job.closed","job.published"],"description":"Mirror","email":"ops@example.com"}`)
	if !strings.HasPrefix(e.Secret, "whsec_") || len(e.Events) != 2 || !e.Enabled || e.Email == nil {
		t.Fatalf("created: %+v", e)
	}
	r := do(t, appFlat, "GET", "/v2/webhooks", "", &key)
	if r.Status != 200 || strings.Contains(string(r.Body), e.Secret) || strings.Contains(string(r.Body), "whsec_") {
		t.Fatalf("list shows a secret: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID), "", &key)
	if r.Status != 200 || strings.Contains(string(r.Body), "whsec_") {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "PATCH", "/v2/webhooks/"+itoa(e.ID), `{"enabled":false,"email":null,"events":["job.paused"]}`, &key)
	var got endpoint
	r.data(t, &got)
	if r.Status != 200 || got.Enabled || got.DisabledReason == nil || got.Email != nil || len(got.Events) != 1 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "PATCH", "/v2/webhooks/"+itoa(e.ID), `{"enabled":true}`, &key)
	r.data(t, &got)
	if !got.Enabled || got.DisabledReason != nil {
		t.Fatalf("re-enable: %s", r.Body)
	}
	r = do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/rotate-secret", "", &key)
	var rot endpoint
	r.data(t, &rot)
	if r.Status != 200 || rot.Secret == e.Secret || !strings.HasPrefix(rot.Secret, "whsec_") || rot.PreviousUntil == nil {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/ping", "", &key)
	if r.Status != 202 {
		t.Fatalf("ping: %d %s", r.Status, r.Body)
	}
	var ping struct {
		ID     int64  `json:"id"`
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	r.data(t, &ping)
	if ping.Type != "webhook.ping" || ping.Status != "pending" {
		t.Fatalf("ping: %s", r.Body)
	}
	var queued int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_outbox WHERE delivery_id = $1`, ping.ID).Scan(&queued); err != nil || queued != 1 {
		t.Fatalf("ping not in the outbox: %d %v", queued, err)
	}
	r = do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID)+"/deliveries", "", &key)
	if r.Status != 200 || !strings.Contains(string(r.Body), "webhook.ping") {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/deliveries/"+itoa(ping.ID)+"/redeliver", "", &key)
	if r.Status != 202 {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/recover", `{"since":"2020-01-01T00:00:00Z"}`, &key)
	if r.Status != 422 || !r.hasDetail("since") {
		t.Fatalf("recover from before the retention: %d %s", r.Status, r.Body)
	}
	r = do(t, appFlat, "DELETE", "/v2/webhooks/"+itoa(e.ID), "", &key)
	if r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r = do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID), "", &key); r.Status != 404 {
		t.Fatalf("deleted endpoint: %d", r.Status)
	}
}

// A key never sees, changes, pings or learns the secret of another
// owner's endpoint: another space's, or another platform key's; every such
// request is a 404 as for an id that does not exist.
func TestWebhookEndpointsOfOthersAreInvisible(t *testing.T) {
	t.Parallel()
	owner := hookKey(3610, 1361)
	e := createHook(t, owner, `{"url":"https://example.com/a","events":["job.created"]}`)
	ping := do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/ping", "", &owner)
	var pd struct {
		ID int64 `json:"id"`
	}
	ping.data(t, &pd)
	platform := hookKey(3611, 0)
	pe := createHook(t, platform, `{"url":"https://example.com/p","events":["job.created"]}`)
	sameSpaceOtherKey := hookKey(3612, 1361)
	if r := do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID), "", &sameSpaceOtherKey); r.Status != 200 {
		t.Fatalf("a space's other key manages the space's endpoints: %d", r.Status)
	}
	for _, tc := range []struct {
		who identity.Identity
		id  int64
	}{{hookKey(3613, 1362), e.ID}, {platform, e.ID}, {hookKey(3614, 0), pe.ID}, {owner, pe.ID}} {
		base := "/v2/webhooks/" + itoa(tc.id)
		for _, req := range []struct{ method, path, body string }{
			{"GET", base, ""}, {"PATCH", base, `{"url":"https://evil.example/x"}`}, {"DELETE", base, ""},
			{"POST", base + "/rotate-secret", ""}, {"POST", base + "/ping", ""}, {"GET", base + "/deliveries", ""},
			{"POST", base + "/deliveries/" + itoa(pd.ID) + "/redeliver", ""},
			{"POST", base + "/recover", `{"since":"` + nowRFC3339() + `"}`},
		} {
			r := do(t, appFlat, req.method, req.path, req.body, &tc.who)
			if r.Status != 404 || strings.Contains(string(r.Body), "whsec_") || strings.Contains(string(r.Body), "example.com") {
				t.Fatalf("key %d %s %s: %d %s", tc.who.KeyID, req.method, req.path, r.Status, r.Body)
			}
		}
		r := do(t, appFlat, "GET", "/v2/webhooks", "", &tc.who)
		if strings.Contains(string(r.Body), `"id":`+itoa(tc.id)+`,`) {
			t.Fatalf("key %d lists endpoint %d: %s", tc.who.KeyID, tc.id, r.Body)
		}
	}
	// Nothing changed.
	r := do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID), "", &owner)
	var got endpoint
	r.data(t, &got)
	if got.URL != "https://example.com/a" || got.PreviousUntil != nil {
		t.Fatalf("another key changed the endpoint: %s", r.Body)
	}
	// Its delivery cannot be redelivered through one's own endpoint either.
	if r := do(t, appFlat, "POST", "/v2/webhooks/"+itoa(pe.ID)+"/deliveries/"+itoa(pd.ID)+"/redeliver", "", &platform); r.Status != 404 {
		t.Fatalf("redeliver another's delivery through one's own endpoint: %d %s", r.Status, r.Body)
	}
	// A restricted key manages nothing.
	ro := identity.Identity{Kind: identity.KindRestricted, KeyID: 3610, SpaceID: 1361, Scopes: []string{"webhooks:manage"}}
	if r := do(t, appFlat, "GET", "/v2/webhooks", "", &ro); r.Status != 403 {
		t.Fatalf("restricted key: %d", r.Status)
	}
}

func TestWebhookEndpointsRefuseBadInput(t *testing.T) {
	t.Parallel()
	key := hookKey(3620, 1363)
	for _, tc := range []struct{ name, body, detail string }{
		{"create422NoURL", `{"events":["job.created"]}`, "url"},
		{"create422HTTP", `{"url":"http://example.com/h","events":["job.created"]}`, "url"},
		{"create422Relative", `{"url":"/hooks","events":["job.created"]}`, "url"},
		{"create422Scheme", `{"url":"ftp://example.com/h","events":["job.created"]}`, "url"},
		{"create422UserInfo", `{"url":"https://u:p@example.com/h","events":["job.created"]}`, "url"},
		{"create422NoEvents", `{"url":"https://example.com/h","events":[]}`, "events"},
		{"create422BadEvent", `{"url":"https://example.com/h","events":["job.deleted"]}`, "events"},
		{"create422EventsType", `{"url":"https://example.com/h","events":"job.created"}`, "events"},
		{"create422Email", `{"url":"https://example.com/h","events":["job.created"],"email":"nope"}`, "email"},
		{"create422Unknown", `{"url":"https://example.com/h","events":["job.created"],"secret":"whsec_x"}`, "secret"},
		{"create422URLType", `{"url":5,"events":["job.created"]}`, "url"},
		// Literal addresses delivery would refuse (issue 45), however spelled.
		{"create422Metadata", `{"url":"https://169.254.169.254/latest","events":["job.created"]}`, "url"},
		{"create422MetadataDecimal", `{"url":"https://2852039166/h","events":["job.created"]}`, "url"},
		{"create422LoopbackHex", `{"url":"https://0x7f000001:8443/h","events":["job.created"]}`, "url"},
		{"create422LoopbackShort", `{"url":"https://127.1/h","events":["job.created"]}`, "url"},
		{"create422Private", `{"url":"https://10.1.2.3/h","events":["job.created"]}`, "url"},
		{"create422Mapped", `{"url":"https://[::ffff:192.168.0.1]/h","events":["job.created"]}`, "url"},
		{"create422ULA", `{"url":"https://[fd12::1]/h","events":["job.created"]}`, "url"},
		{"create422Localhost", `{"url":"https://localhost/h","events":["job.created"]}`, "url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, appFlat, "POST", "/v2/webhooks", tc.body, &key)
			if r.Status != 422 || !r.hasDetail(tc.detail) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	if r := do(t, appFlat, "POST", "/v2/webhooks", `{"url":`, &key); r.Status != 400 {
		t.Fatalf("bad JSON: %d", r.Status)
	}
	if r := do(t, appFlat, "GET", "/v2/webhooks/abc", "", &key); r.Status != 422 || !r.hasDetail("id_webhook") {
		t.Fatalf("bad id: %d %s", r.Status, r.Body)
	}
	e := createHook(t, key, `{"url":"https://example.com/ok","events":["job.created"]}`)
	if r := do(t, appFlat, "PATCH", "/v2/webhooks/"+itoa(e.ID), `{"url":"http://example.com/x"}`, &key); r.Status != 422 || !r.hasDetail("url") {
		t.Fatalf("patch http: %d %s", r.Status, r.Body)
	}
	if r := do(t, appFlat, "PATCH", "/v2/webhooks/"+itoa(e.ID), `{"url":"https://[fe80::1]/x"}`, &key); r.Status != 422 || !r.hasDetail("url") {
		t.Fatalf("patch to a link-local address: %d %s", r.Status, r.Body)
	}
	if r := do(t, appFlat, "POST", "/v2/webhooks/"+itoa(e.ID)+"/recover", `{"since":"yesterday"}`, &key); r.Status != 422 || !r.hasDetail("since") {
		t.Fatalf("recover bad since: %d %s", r.Status, r.Body)
	}
	if r := do(t, appFlat, "GET", "/v2/webhooks/"+itoa(e.ID)+"/deliveries?limit=0", "", &key); r.Status != 422 || !r.hasDetail("limit") {
		t.Fatalf("deliveries bad limit: %d %s", r.Status, r.Body)
	}
}
