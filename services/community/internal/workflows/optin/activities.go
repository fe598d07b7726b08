package optin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Activities are the workflow's side effects; the struct holds their dependencies.
type Activities struct {
	Newsletter    *newsletterbus.Business
	Mail          mailer.Sender
	PublicBaseURL string
	// Privacy adds the erasure link to every mail (docs/privacy.md).
	Privacy *privacy.Sealer
	// Metrics counts confirmations and timeouts (nil: not counted).
	Metrics *metrics.Counts
}

// NewMetrics registers newsletter_optin_outcomes_total{outcome} on reg, for
// Activities.Metrics.
func NewMetrics(reg prometheus.Registerer) *metrics.Counts {
	return metrics.NewCounts(reg, "newsletter_optin_outcomes_total",
		"Newsletter double opt-ins by outcome (confirmed: subscribed; timed_out: the pending record was removed unconfirmed).",
		"outcome", "confirmed", "timed_out")
}

// SendInput asks for a confirmation mail.
type SendInput struct {
	SubscriberID int64
	TTL          time.Duration
}

// SendResult tells whether a mail went out, and the record's status and
// request_seq when it was read.
type SendResult struct {
	Sent   bool
	Status string
	Seq    int
}

// ExpireInput asks to remove a pending record not re-requested since MaxSeq.
type ExpireInput struct {
	SubscriberID int64
	MaxSeq       int
}

// ExpireResult tells whether the record was removed, and otherwise its state.
type ExpireResult struct {
	Deleted bool
	Status  string // "" when the record is gone
	Seq     int
}

func (a *Activities) link(path, token string) string {
	return strings.TrimRight(a.PublicBaseURL, "/") + path + "?token=" + url.QueryEscape(token)
}

// SendConfirmation mails the confirmation link to a pending subscriber.
func (a *Activities) SendConfirmation(ctx context.Context, in SendInput) (SendResult, error) {
	s, err := a.Newsletter.Get(ctx, in.SubscriberID)
	if errors.Is(err, newsletterbus.ErrNotFound) {
		return SendResult{}, nil
	}
	if err != nil {
		return SendResult{}, err
	}
	if s.Status != newsletterbus.StatusPending {
		return SendResult{Status: s.Status, Seq: s.RequestSeq}, nil
	}
	signer := a.Newsletter.Signer()
	confirm := a.link("/v2/newsletters/confirm", signer.ConfirmToken(s, time.Now(), in.TTL))
	unsubscribe := a.link("/v2/newsletters/unsubscribe", signer.UnsubscribeToken(s))
	hours := int(in.TTL.Round(time.Hour) / time.Hour)
	greeting := "Hello,"
	if s.Name != "" {
		greeting = "Hello " + s.Name + ","
	}
	text := fmt.Sprintf(`%s

please confirm that you want to receive the coworkjobs newsletter:

%s

The link is valid for %d hours. If you did not ask for this, ignore this mail:
without confirmation the address is removed. To refuse further mail now:
%s

coworkjobs
`, greeting, confirm, hours, unsubscribe)
	html := fmt.Sprintf(`<p>%s</p><p>please confirm that you want to receive the coworkjobs newsletter:</p>
<p><a href="%s">Confirm my subscription</a></p>
<p>The link is valid for %d hours. If you did not ask for this, ignore this mail.</p>`,
		htmlEscape(greeting), confirm, hours)
	if err := a.Mail.Send(ctx, a.Privacy.AddLink(mailer.Message{To: s.Email, Subject: "Confirm your coworkjobs newsletter subscription",
		Text: text, HTML: html, ListUnsubscribe: unsubscribe}, a.PublicBaseURL)); err != nil {
		return SendResult{}, err
	}
	if err := a.Newsletter.MarkMailSent(ctx, s.ID); err != nil {
		return SendResult{}, err
	}
	return SendResult{Sent: true, Status: s.Status, Seq: s.RequestSeq}, nil
}

// MarkSubscribed confirms a pending subscriber; it reports whether the
// subscriber is subscribed now.
func (a *Activities) MarkSubscribed(ctx context.Context, id int64) (bool, error) {
	ok, err := a.Newsletter.MarkSubscribed(ctx, id)
	if ok && err == nil {
		a.Metrics.Add("confirmed", 1)
	}
	return ok, err
}

// SendWelcome mails a subscribed address its welcome with the unsubscribe link.
func (a *Activities) SendWelcome(ctx context.Context, id int64) error {
	s, err := a.Newsletter.Get(ctx, id)
	if errors.Is(err, newsletterbus.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.Status != newsletterbus.StatusSubscribed {
		return nil
	}
	unsubscribe := a.link("/v2/newsletters/unsubscribe", a.Newsletter.Signer().UnsubscribeToken(s))
	text := fmt.Sprintf(`Welcome to the coworkjobs newsletter!

Your subscription is confirmed. You can unsubscribe at any time:
%s

coworkjobs
`, unsubscribe)
	return a.Mail.Send(ctx, a.Privacy.AddLink(mailer.Message{To: s.Email, Subject: "Welcome to the coworkjobs newsletter",
		Text: text, ListUnsubscribe: unsubscribe}, a.PublicBaseURL))
}

// ExpirePending removes the record if it is still pending and was not
// re-requested since MaxSeq.
func (a *Activities) ExpirePending(ctx context.Context, in ExpireInput) (ExpireResult, error) {
	deleted, err := a.Newsletter.ExpirePending(ctx, in.SubscriberID, in.MaxSeq)
	if err != nil {
		return ExpireResult{}, err
	}
	if deleted {
		a.Metrics.Add("timed_out", 1)
		return ExpireResult{Deleted: true}, nil
	}
	s, err := a.Newsletter.Get(ctx, in.SubscriberID)
	if errors.Is(err, newsletterbus.ErrNotFound) {
		return ExpireResult{}, nil
	}
	if err != nil {
		return ExpireResult{}, err
	}
	return ExpireResult{Status: s.Status, Seq: s.RequestSeq}, nil
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func htmlEscape(s string) string { return htmlEscaper.Replace(s) }
