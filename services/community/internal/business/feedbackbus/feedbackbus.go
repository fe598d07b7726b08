// Package feedbackbus holds the rules for public feedback: what a valid
// message is and how it is kept.
package feedbackbus

import (
	"context"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// Limits of a feedback message (documented in the OpenAPI fragment).
const (
	MaxMessageChars = 5000
	MaxEmailChars   = 254
	MaxURLChars     = 2048
	DefaultCategory = "general"
)

// Categories a message may be filed under.
var Categories = []string{"general", "bug", "feature", "content", "jobs", "events", "other"}

// NewFeedback is a message as a visitor sent it.
type NewFeedback struct {
	Message   string
	Email     string
	URL       string
	Category  string
	ClientIP  string
	UserAgent string
}

// Feedback is a stored message.
type Feedback struct {
	ID        int64
	Message   string
	Email     string
	URL       string
	Category  string
	ClientIP  string
	UserAgent string
	CreatedAt time.Time
}

// Storer is the storage the rules need.
type Storer interface {
	Create(ctx context.Context, f NewFeedback) (Feedback, error)
}

// Business applies the feedback rules.
type Business struct{ store Storer }

// New returns the rules over store.
func New(store Storer) *Business { return &Business{store: store} }

// Normalize trims the fields and fills the default category.
func Normalize(f NewFeedback) NewFeedback {
	f.Message = strings.TrimSpace(f.Message)
	f.Email = strings.TrimSpace(f.Email)
	f.URL = strings.TrimSpace(f.URL)
	f.Category = strings.ToLower(strings.TrimSpace(f.Category))
	if f.Category == "" {
		f.Category = DefaultCategory
	}
	// The header is raw bytes: keep only what a text column can hold, and
	// cut on a character boundary.
	f.UserAgent = strings.ReplaceAll(strings.ToValidUTF8(f.UserAgent, ""), "\x00", "")
	if len(f.UserAgent) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(f.UserAgent[cut]) {
			cut--
		}
		f.UserAgent = f.UserAgent[:cut]
	}
	return f
}

// Validate returns every problem of a normalised message.
func Validate(f NewFeedback) []string {
	var problems []string
	switch n := utf8.RuneCountInString(f.Message); {
	case n == 0:
		problems = append(problems, "message is required")
	case n > MaxMessageChars:
		problems = append(problems, fmt.Sprintf("message must be at most %d characters", MaxMessageChars))
	}
	if f.Email != "" {
		if p := ValidateEmail(f.Email); p != "" {
			problems = append(problems, p)
		}
	}
	if f.URL != "" {
		if p := validateURL(f.URL); p != "" {
			problems = append(problems, p)
		}
	}
	if !isCategory(f.Category) {
		problems = append(problems, "category must be one of "+strings.Join(Categories, ", "))
	}
	return problems
}

// ValidateEmail checks a plain address (no display name) and returns the
// problem, or "".
func ValidateEmail(email string) string {
	if len(email) > MaxEmailChars {
		return fmt.Sprintf("email must be at most %d characters", MaxEmailChars)
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" || !strings.Contains(email[strings.LastIndexByte(email, '@')+1:], ".") {
		return "email must be a valid email address"
	}
	return ""
}

func validateURL(raw string) string {
	if len(raw) > MaxURLChars {
		return fmt.Sprintf("url must be at most %d characters", MaxURLChars)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "url must be an absolute http or https URL"
	}
	return ""
}

func isCategory(c string) bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}

// Create validates and stores a message.
func (b *Business) Create(ctx context.Context, f NewFeedback) (Feedback, error) {
	f = Normalize(f)
	if problems := Validate(f); len(problems) > 0 {
		return Feedback{}, &validate.Error{What: "feedback", Problems: problems}
	}
	saved, err := b.store.Create(ctx, f)
	if err != nil {
		return Feedback{}, fmt.Errorf("create feedback: %w", err)
	}
	return saved, nil
}
