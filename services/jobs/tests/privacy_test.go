package tests

import (
	"context"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
)

// The public erasure route: a page that erases nothing, a POST that
// erases the address's alerts and queues community's part, 4xx for a bad
// token with nothing erased.
func TestErasureRoute(t *testing.T) {
	ctx := context.Background()
	sealer, _ := privacy.NewSealer([]byte(secret))
	email := "route-erase@example.com"
	store := alertdb.New(pool)
	for _, q := range []string{"q=host", "q=cook"} {
		if _, _, err := store.Save(ctx, alertbus.Alert{Email: email, Search: q, Frequency: alertbus.Instant, TimeZone: "UTC",
			Nonce: alertbus.NewNonce()}, "", alertbus.ConfirmLimits{PerDay: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	alerts := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM alerts a JOIN alert_addresses aa ON aa.id = a.address_id WHERE aa.email = $1`,
			email).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	pub := &identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.9"}
	tok := sealer.Token(email)
	page := func(target string) (int, string) {
		req := httptest.NewRequest("GET", target, nil)
		h, _ := codec.Sign(*pub, 60e9)
		req.Header.Set(identity.Header, h)
		req.Header.Set("Accept", "text/html")
		res, err := appFlat.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, body := page("/v2/privacy/erase?token=" + url.QueryEscape(tok)); status != 200 ||
		!strings.Contains(body, `<button type="submit">`) || !strings.Contains(body, email) {
		t.Fatalf("page: %d %s", status, body)
	}
	if status, _ := page("/v2/privacy/erase?token=" + url.QueryEscape(tok[:len(tok)-2])); status != 404 {
		t.Fatalf("page of a cut token: %d, want 404", status)
	}
	if r := do(t, appFlat, "GET", "/v2/privacy/erase?token="+url.QueryEscape(tok[:len(tok)-2]), "", pub); r.Status != 404 {
		t.Fatalf("GET of a cut token as an API client: %d, want 404 in the envelope", r.Status)
	}
	if r := do(t, appFlat, "GET", "/v2/privacy/erase", "", pub); r.Status != 422 {
		t.Fatalf("GET without a token as an API client: %d, want 422 in the envelope", r.Status)
	}
	if alerts() != 2 {
		t.Fatal("the page erased something")
	}
	other, _ := privacy.NewSealer([]byte(strings.Repeat("o", 40)))
	for name, c := range map[string]struct {
		path, body string
		status     int
	}{
		"no token":      {"/v2/privacy/erase", "", 422},
		"forged":        {"/v2/privacy/erase?token=" + url.QueryEscape(other.Token(email)), "", 404},
		"unknown field": {"/v2/privacy/erase", `{"token":"` + tok + `","email":"` + email + `"}`, 422},
		"too long":      {"/v2/privacy/erase?token=" + strings.Repeat("A", 513), "", 422},
	} {
		if r := do(t, appFlat, "POST", c.path, c.body, pub); r.Status != c.status {
			t.Errorf("%s: %d, want %d", name, r.Status, c.status)
		}
	}
	if alerts() != 2 {
		t.Fatal("a refused POST erased something")
	}
	if r := do(t, appFlat, "POST", "/v2/privacy/erase", `{"token":"`+tok+`"}`, pub); r.Status != 200 {
		t.Fatalf("erase: %d", r.Status)
	}
	var queued int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM privacy_outbox WHERE token = $1`, tok).Scan(&queued); err != nil || queued != 1 {
		t.Fatalf("%d erasures queued for community (%v), want 1", queued, err)
	}
	if alerts() != 0 {
		t.Fatal("the alerts stayed")
	}
	_, _ = pool.Exec(ctx, `DELETE FROM privacy_outbox WHERE token = $1`, tok)
}
