package tests

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/community/internal/app/feedbackapp"
)

func TestFeedbackCreate(t *testing.T) {
	t.Parallel()
	form := url.Values{"message": {"Love the form version"}, "email": {"ana@example.org"}, "category": {"Feature"}}.Encode()
	cases := []struct {
		name, body, contentType string
		wantCategory, wantEmail string
	}{
		{"create201JSON", `{"message":"  The events page is great  ","email":"jo@example.com","url":"https://coworkjobs.example/events","category":"content"}`,
			"application/json", "content", "jo@example.com"},
		{"create201JSONCharset", `{"message":"only a message"}`, "application/json; charset=utf-8", "general", ""},
		{"create201Form", form, "application/x-www-form-urlencoded", "feature", "ana@example.org"},
		{"create201NullOptionals", `{"message":"x","email":null,"url":null,"category":null}`, "application/json", "general", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, req{method: "POST", path: "/v2/feedback", body: tc.body, contentType: tc.contentType, id: &public,
				header: map[string]string{"User-Agent": "feedback-test"}})
			if r.Status != http.StatusCreated {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			var c feedbackapp.Created
			r.Env.Into(t, &c)
			if c.ID <= 0 || c.Category != tc.wantCategory || c.CreatedAt == "" {
				t.Fatalf("created %+v", c)
			}
			var msg, ip, ua, email string
			err := pool.QueryRow(context.Background(), `SELECT message, coalesce(client_ip, ''), coalesce(user_agent, ''),
				coalesce(email, '') FROM feedback WHERE id = $1`, c.ID).Scan(&msg, &ip, &ua, &email)
			if err != nil {
				t.Fatal(err)
			}
			if ip != "203.0.113.7" || ua != "feedback-test" || email != tc.wantEmail || msg != strings.TrimSpace(msg) {
				t.Fatalf("stored %q %q %q %q", msg, ip, ua, email)
			}
		})
	}
}

func TestFeedbackErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 5001)
	cases := []struct {
		name, body, contentType string
		status                  int
		want                    []string
	}{
		{"create422EveryProblem", `{"message":"   ","email":"not-an-email","url":"ftp://x","category":"spam"}`, "application/json",
			422, []string{"message is required", "email must be a valid email address", "url must be an absolute http or https URL", "category must be one of"}},
		{"create422MessageTooLong", `{"message":"` + long + `"}`, "application/json", 422, []string{"message must be at most 5000 characters"}},
		{"create422WrongTypes", `{"message":5,"email":true,"url":"https://ok.example","category":"bug"}`, "application/json",
			422, []string{"message must be a string", "email must be a string"}},
		{"create422MissingMessage", `{}`, "application/json", 422, []string{"message is required"}},
		{"create422FormEveryProblem", "email=bad%40&url=nope", "application/x-www-form-urlencoded", 422,
			[]string{"message is required", "email must be", "url must be"}},
		{"create422EmailWithName", `{"message":"x","email":"Jo <jo@example.com>"}`, "application/json", 422, []string{"email must be"}},
		{"create400BadJSON", `{"message":`, "application/json", 400, nil},
		{"create400NotObject", `["message"]`, "application/json", 400, nil},
		{"create400Empty", ``, "application/json", 400, nil},
		{"create415Text", `message=hi`, "text/plain", 415, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, req{method: "POST", path: "/v2/feedback", body: tc.body, contentType: tc.contentType, id: &public})
			if r.Status != tc.status || r.Env.Success || r.Env.Error == nil {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if tc.status == 422 {
				d := r.Env.Problems(t)
				if len(d) != len(tc.want) {
					t.Fatalf("details %v, want %d problems", d, len(tc.want))
				}
				for _, w := range tc.want {
					if !contains(d, w) {
						t.Errorf("missing %q in %v", w, d)
					}
				}
			}
			if tc.status == 400 && r.Env.Error.Code != "bad_request" {
				t.Fatalf("code %s", r.Env.Error.Code)
			}
		})
	}
}
