package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

var service = identity.Identity{Kind: identity.KindService, Service: "jobs"}

// The internal erasure and export: service identities only, the address
// sealed, a forged token refused with nothing erased, idempotent.
func TestInternalErasureAndExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	email := "erase-me@example.com"
	if r, _ := subscribe(t, fmt.Sprintf(`{"email":%q,"consent":true}`, email)); r.Status != 202 {
		t.Fatalf("subscribe: %d", r.Status)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO feedback (message, email, category) VALUES ('hi', 'Erase-Me@example.com', 'other')`); err != nil {
		t.Fatal(err)
	}
	body := func(tok string) string { return fmt.Sprintf(`{"token":%q}`, tok) }
	good := sealer.Token(email)
	post := func(path, b string, id *identity.Identity) webtest.Reply {
		return svc.Do(t, webtest.Request{Method: "POST", Target: path, Body: b, ContentType: "application/json", Identity: id})
	}

	// Not a service: refused, whatever the token.
	for _, id := range []*identity.Identity{nil, &public} {
		for _, path := range []string{"/internal/privacy/erase", "/internal/privacy/export"} {
			if r := post(path, body(good), id); r.Status != 401 && r.Status != 403 {
				t.Errorf("%s as %v: %d, want 401/403", path, id, r.Status)
			}
		}
	}
	other, _ := privacy.NewSealer([]byte(strings.Repeat("x", 32)))
	for name, b := range map[string]string{"none": `{}`, "forged": body(other.Token(email)), "cut": body(good[:len(good)-3]),
		"unknown field": `{"token":"` + good + `","email":"x"}`} {
		if r := post("/internal/privacy/erase", b, &service); r.Status != 422 {
			t.Errorf("%s: %d, want 422", name, r.Status)
		}
	}

	r := post("/internal/privacy/export", body(good), &service)
	var exp struct {
		Newsletter *struct {
			Status string `json:"status"`
		} `json:"newsletter"`
		Feedback int `json:"feedback_messages"`
	}
	r.Env.Into(t, &exp)
	if r.Status != 200 || exp.Newsletter == nil || exp.Newsletter.Status != "pending" || exp.Feedback != 1 {
		t.Fatalf("export: %d %+v", r.Status, exp)
	}

	for i, want := range []string{`"subscriber":true,"feedback_messages":1`, `"subscriber":false,"feedback_messages":0`} {
		r := post("/internal/privacy/erase", body(good), &service)
		if r.Status != 200 || !strings.Contains(string(r.Body), want) {
			t.Fatalf("erase #%d: %d %s, want %s", i+1, r.Status, r.Body, want)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM subscribers WHERE email = $1) + (SELECT count(*) FROM newsletter_outbox WHERE email = $1)
		+ (SELECT count(*) FROM feedback WHERE lower(email) = $1)`, email).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows still name the address (%v)", n, err)
	}
}
