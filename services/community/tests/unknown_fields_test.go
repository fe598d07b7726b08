package tests

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// A body field the document does not name is refused with a 422 that names
// it, in JSON and in a form, listed with every other problem; nothing is
// stored. The fields a route accepts without effect (RFC 8058's
// List-Unsubscribe) are not refused.
func TestUnknownBodyFieldsAreRefused(t *testing.T) {
	t.Parallel()
	const form = "application/x-www-form-urlencoded"
	cases := []struct {
		name, path, body, contentType string
		want                          []string
	}{
		{"feedback422UnknownJSON", "/v2/feedback", `{"message":"unknown-json","name":"Jo"}`, "application/json",
			[]string{`unknown field "name"`}},
		{"feedback422UnknownForm", "/v2/feedback", "message=unknown-form&submit=Send", form,
			[]string{`unknown field "submit"`}},
		{"feedback422UnknownWithEveryOtherProblem", "/v2/feedback", `{"message":5,"emial":"jo@example.com","category":"spam"}`,
			"application/json", []string{"message must be a string", `unknown field "emial"`, "category must be one of general, bug, feature, content, jobs, events, other"}},
		{"feedback422NamesAreCaseSensitive", "/v2/feedback", `{"Message":"unknown-case"}`, "application/json",
			[]string{`unknown field "Message"`, "message is required"}},
		{"subscribe422UnknownJSON", "/v2/newsletters/subscribe", `{"email":"unknown-json@example.com","consent":true,"plan":"weekly"}`,
			"application/json", []string{`unknown field "plan"`}},
		{"subscribe422UnknownForm", "/v2/newsletters/subscribe", "email=unknown-form%40example.com&consent=on&submit=Subscribe", form,
			[]string{`unknown field "submit"`}},
		{"confirm422UnknownJSON", "/v2/newsletters/confirm", `{"token":"abc","redirect":"https://e.example"}`, "application/json",
			[]string{`unknown field "redirect"`}},
	}
	t.Run("refused", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := do(t, req{method: "POST", path: tc.path, body: tc.body, contentType: tc.contentType, id: &public})
				if r.Status != http.StatusUnprocessableEntity || r.Env.Error == nil || r.Env.Error.Code != "validation_error" ||
					r.Env.Error.Message != "Validation failed" {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				if got := r.Env.Problems(t); !slices.Equal(got, tc.want) {
					t.Fatalf("problems %q, want %q", got, tc.want)
				}
			})
		}
	})
	t.Run("nothingStored", func(t *testing.T) {
		var feedback, subscribers int
		ctx := context.Background()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM feedback WHERE message LIKE 'unknown-%'`).Scan(&feedback); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM subscribers WHERE email LIKE 'unknown-%'`).Scan(&subscribers); err != nil {
			t.Fatal(err)
		}
		if feedback != 0 || subscribers != 0 {
			t.Fatalf("refused bodies stored %d feedback rows and %d subscribers", feedback, subscribers)
		}
	})
}

// RFC 8058's one-click unsubscribe may carry the token in the form beside
// List-Unsubscribe=One-Click, which is accepted and has no effect.
func TestOneClickUnsubscribeWithTheTokenInTheBody(t *testing.T) {
	t.Parallel()
	const email = "one-click-body@example.com"
	if r, _ := subscribe(t, `{"email":"`+email+`","consent":true}`); r.Status != http.StatusAccepted {
		t.Fatalf("subscribe: status %d: %s", r.Status, r.Body)
	}
	body := url.Values{"token": {signer.UnsubscribeToken(subscriber(t, email))}, "List-Unsubscribe": {"One-Click"}}.Encode()
	r := do(t, req{method: "POST", path: "/v2/newsletters/unsubscribe", body: body,
		contentType: "application/x-www-form-urlencoded", id: &public})
	if r.Status != http.StatusOK || subscriber(t, email).Status != "unsubscribed" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
}
