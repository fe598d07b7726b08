package tests

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/community/internal/app/newsletterapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
)

func subscribe(t *testing.T, body string) (response, newsletterapp.Subscription) {
	t.Helper()
	r := do(t, req{method: "POST", path: "/v2/newsletters/subscribe", body: body, contentType: "application/json", id: &public})
	var s newsletterapp.Subscription
	if r.Env.Success {
		r.Env.Into(t, &s)
	}
	return r, s
}

func outboxRows(t *testing.T, email, kind string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM newsletter_outbox WHERE email = $1 AND kind = $2`,
		email, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func subscriber(t *testing.T, email string) newsletterbus.Subscriber {
	t.Helper()
	s, err := newsletterdb.New(pool).GetByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("subscriber %s: %v", email, err)
	}
	return s
}

func TestSubscribePendingStoresConsentAndOutbox(t *testing.T) {
	t.Parallel()
	r, s := subscribe(t, `{"email":" Mia@Example.COM ","consent":true,"name":"Mia","source":"footer"}`)
	if r.Status != http.StatusAccepted || s.Status != "pending" || s.Email != "mia@example.com" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	sub := subscriber(t, "mia@example.com")
	if sub.Status != "pending" || sub.ConsentIP != "203.0.113.7" || sub.ConsentVersion != "test-v1" ||
		sub.ConsentAt.IsZero() || sub.Name != "Mia" || sub.Source != "footer" || sub.RequestSeq != 1 {
		t.Fatalf("stored %+v", sub)
	}
	if n := outboxRows(t, "mia@example.com", newsletterbus.OutboxRequestMail); n != 1 {
		t.Fatalf("outbox rows %d", n)
	}

	// Again within the interval: still one subscription, no second mail.
	r, s = subscribe(t, `{"email":"mia@example.com","consent":true}`)
	if r.Status != http.StatusAccepted || s.Status != "pending" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if n := outboxRows(t, "mia@example.com", newsletterbus.OutboxRequestMail); n != 1 {
		t.Fatalf("resubscribe within the interval queued a mail: %d rows", n)
	}

	// Past the interval: the mail is requested once more, same row.
	if _, err := pool.Exec(context.Background(), `UPDATE subscribers SET mail_requested_at = now() - interval '11 minutes'
		WHERE email = 'mia@example.com'`); err != nil {
		t.Fatal(err)
	}
	r, _ = subscribe(t, `{"email":"mia@example.com","consent":true}`)
	if r.Status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if n := outboxRows(t, "mia@example.com", newsletterbus.OutboxRequestMail); n != 2 {
		t.Fatalf("outbox rows %d, want 2", n)
	}
	if got := subscriber(t, "mia@example.com"); got.ID != sub.ID || got.RequestSeq != 2 || got.Name != "Mia" {
		t.Fatalf("row changed identity: %+v", got)
	}
}

func TestSubscribeForm(t *testing.T) {
	t.Parallel()
	body := url.Values{"email": {"form@example.com"}, "consent": {"on"}}.Encode()
	r := do(t, req{method: "POST", path: "/v2/newsletters/subscribe", body: body, contentType: "application/x-www-form-urlencoded", id: &public})
	if r.Status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
}

func TestSubscribeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		status     int
		want       []string
	}{
		{"subscribe422NoConsent", `{"email":"a@example.com"}`, 422, []string{"consent must be true"}},
		{"subscribe422ConsentFalse", `{"email":"a@example.com","consent":false}`, 422, []string{"consent must be true"}},
		{"subscribe422ConsentString", `{"email":"a@example.com","consent":"true"}`, 422, []string{"consent must be a boolean"}},
		{"subscribe422EveryProblem", `{"email":"nope","name":"","source":5}`, 422,
			[]string{"email must be a valid email address", "consent must be true", "source must be a string"}},
		{"subscribe422MissingEmail", `{"consent":true}`, 422, []string{"email is required"}},
		{"subscribe400BadJSON", `{"email":`, 400, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := subscribe(t, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if tc.status == 422 {
				d := r.Env.Problems(t)
				if len(d) != len(tc.want) {
					t.Fatalf("details %v", d)
				}
				for _, w := range tc.want {
					if !contains(d, w) {
						t.Errorf("missing %q in %v", w, d)
					}
				}
			}
		})
	}
	var n int
	_ = pool.QueryRow(context.Background(), "SELECT count(*) FROM subscribers WHERE email = 'a@example.com'").Scan(&n)
	if n != 0 {
		t.Fatalf("a rejected subscription was stored")
	}
}

func TestConfirmAndUnsubscribe(t *testing.T) {
	t.Parallel()
	const email = "confirm@example.com"
	if r, _ := subscribe(t, `{"email":"`+email+`","consent":true}`); r.Status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	sub := subscriber(t, email)
	tok := signer.ConfirmToken(sub, time.Now(), 48*time.Hour)

	get := func(path string) (response, newsletterapp.Subscription) {
		r := do(t, req{method: "GET", path: path, id: &public})
		var s newsletterapp.Subscription
		if r.Env.Success {
			r.Env.Into(t, &s)
		}
		return r, s
	}
	t.Run("confirm422Tampered", func(t *testing.T) {
		r, _ := get("/v2/newsletters/confirm?token=" + url.QueryEscape(tok[:len(tok)-3]+"AAA"))
		if r.Status != 422 || !contains(r.Env.Problems(t), "token is invalid") {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("confirm422Expired", func(t *testing.T) {
		old := signer.ConfirmToken(sub, time.Now().Add(-49*time.Hour), 48*time.Hour)
		r, _ := get("/v2/newsletters/confirm?token=" + url.QueryEscape(old))
		if r.Status != 422 || !contains(r.Env.Problems(t), "token has expired") {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("confirm422UnsubscribeTokenNotAccepted", func(t *testing.T) {
		r, _ := get("/v2/newsletters/confirm?token=" + url.QueryEscape(signer.UnsubscribeToken(sub)))
		if r.Status != 422 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("confirm422Missing", func(t *testing.T) {
		r, _ := get("/v2/newsletters/confirm")
		if r.Status != 422 || !contains(r.Env.Problems(t), "token is required") {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("confirm404UnknownSubscriber", func(t *testing.T) {
		ghost := newsletterbus.Subscriber{ID: 999999, Email: "ghost@example.com"}
		r, _ := get("/v2/newsletters/confirm?token=" + url.QueryEscape(signer.ConfirmToken(ghost, time.Now(), time.Hour)))
		if r.Status != 404 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})

	r, s := get("/v2/newsletters/confirm?token=" + url.QueryEscape(tok))
	if r.Status != 200 || s.Status != "subscribed" || s.Email != email {
		t.Fatalf("confirm: status %d: %s", r.Status, r.Body)
	}
	if got := subscriber(t, email); got.Status != "subscribed" || got.ConfirmedAt == nil {
		t.Fatalf("stored %+v", got)
	}
	if n := outboxRows(t, email, newsletterbus.OutboxConfirmed); n != 1 {
		t.Fatalf("confirmed outbox rows %d", n)
	}
	r, s = get("/v2/newsletters/confirm?token=" + url.QueryEscape(tok))
	if r.Status != 200 || s.Status != "already_subscribed" {
		t.Fatalf("confirm again: status %d: %s", r.Status, r.Body)
	}

	// Already subscribed: no mail, and the same answer as any other address,
	// so the route cannot be used to test who is on the list.
	before := outboxRows(t, email, newsletterbus.OutboxRequestMail)
	r2, s2 := subscribe(t, `{"email":"`+email+`","consent":true}`)
	_, fresh := subscribe(t, `{"email":"fresh-`+email+`","consent":true}`)
	if r2.Status != 202 || s2.Status != "pending" || s2.Message != fresh.Message {
		t.Fatalf("subscribe again: status %d: %s (a new address gets %q)", r2.Status, r2.Body, fresh.Message)
	}
	if after := outboxRows(t, email, newsletterbus.OutboxRequestMail); after != before {
		t.Fatalf("already subscribed queued a mail")
	}

	un := signer.UnsubscribeToken(sub)
	r = do(t, req{method: "POST", path: "/v2/newsletters/unsubscribe?token=" + url.QueryEscape(un),
		body: "List-Unsubscribe=One-Click", contentType: "application/x-www-form-urlencoded", id: &public})
	if r.Status != 200 {
		t.Fatalf("unsubscribe: status %d: %s", r.Status, r.Body)
	}
	r.Env.Into(t, &s)
	if s.Status != "unsubscribed" || subscriber(t, email).Status != "unsubscribed" {
		t.Fatalf("unsubscribe: %s", r.Body)
	}
	r, s = get("/v2/newsletters/unsubscribe?token=" + url.QueryEscape(un))
	if r.Status != 200 || s.Status != "unsubscribed" {
		t.Fatalf("unsubscribe again: status %d: %s", r.Status, r.Body)
	}
	r, _ = get("/v2/newsletters/confirm?token=" + url.QueryEscape(tok))
	if r.Status != 409 || r.Env.Error.Code != "conflict" {
		t.Fatalf("confirm after unsubscribe: status %d: %s", r.Status, r.Body)
	}
	r, _ = get("/v2/newsletters/unsubscribe?token=" + url.QueryEscape(tok))
	if r.Status != 422 {
		t.Fatalf("unsubscribe with confirm token: status %d: %s", r.Status, r.Body)
	}

	// Subscribing again after unsubscribing starts a fresh opt-in on the same row.
	r2, s2 = subscribe(t, `{"email":"`+email+`","consent":true}`)
	if r2.Status != 202 || s2.Status != "pending" {
		t.Fatalf("resubscribe: status %d: %s", r2.Status, r2.Body)
	}
	if got := subscriber(t, email); got.ID != sub.ID || got.Status != "pending" || got.UnsubscribedAt != nil {
		t.Fatalf("resubscribed row %+v", got)
	}
}

func TestSubscribeConcurrentFirstRequestsMakeOneSubscription(t *testing.T) {
	t.Parallel()
	const email = "race@example.com"
	statuses := make(chan int, 8)
	for i := 0; i < 8; i++ {
		go func() {
			r, _ := subscribe(t, `{"email":"`+email+`","consent":true}`)
			statuses <- r.Status
		}()
	}
	for i := 0; i < 8; i++ {
		if s := <-statuses; s != http.StatusAccepted {
			t.Errorf("status %d", s)
		}
	}
	var rows int
	_ = pool.QueryRow(context.Background(), "SELECT count(*) FROM subscribers WHERE email = $1", email).Scan(&rows)
	if rows != 1 || outboxRows(t, email, newsletterbus.OutboxRequestMail) != 1 {
		t.Fatalf("rows %d, outbox %d", rows, outboxRows(t, email, newsletterbus.OutboxRequestMail))
	}
}
