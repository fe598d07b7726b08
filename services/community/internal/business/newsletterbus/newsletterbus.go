// Package newsletterbus holds the newsletter rules: consent, double opt-in
// state, re-send throttling, confirmation and unsubscription.
package newsletterbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus"
)

// Subscriber statuses.
const (
	StatusPending      = "pending"
	StatusSubscribed   = "subscribed"
	StatusUnsubscribed = "unsubscribed"
	// StatusAlreadySubscribed is an answer, never a stored status.
	StatusAlreadySubscribed = "already_subscribed"
)

// Outbox kinds relayed to Temporal by the worker.
const (
	OutboxRequestMail = "request_mail" // start the opt-in workflow or ask it to re-send
	OutboxConfirmed   = "confirmed"    // tell the workflow the address was confirmed
)

// Field limits.
const (
	MaxNameChars   = 100
	MaxSourceChars = 100
)

// Sentinel errors.
var (
	ErrNotFound     = errors.New("subscription not found")
	ErrUnsubscribed = errors.New("subscription was cancelled")
)

// Subscriber is one address and its consent evidence.
type Subscriber struct {
	ID              int64
	Email           string
	Name            string
	Source          string
	Status          string
	ConsentAt       time.Time
	ConsentIP       string
	ConsentVersion  string
	MailRequestedAt time.Time
	RequestSeq      int
	MailSentAt      *time.Time
	MailsSent       int
	ConfirmedAt     *time.Time
	UnsubscribedAt  *time.Time
	CreatedAt       time.Time
}

// NewSubscription is a subscribe request.
type NewSubscription struct {
	Email    string
	Name     string
	Source   string
	Consent  bool
	ClientIP string
}

// Plan is what a rule decided to do with the current row inside the store's
// transaction: write Next (insert when there was no row) and queue Outbox.
type Plan struct {
	Write  bool
	Next   Subscriber
	Outbox string
}

// Decide is a rule run by the store on the locked current row (nil if none).
type Decide func(cur *Subscriber) (Plan, error)

// OutboxItem is one relayed message.
type OutboxItem struct {
	Kind         string
	SubscriberID int64
	Email        string
	RequestSeq   int
}

// Storer is the storage the rules need.
type Storer interface {
	// ChangeByEmail runs decide on the locked row of email and applies its plan
	// and outbox row in one transaction.
	ChangeByEmail(ctx context.Context, email string, decide Decide) (Subscriber, error)
	// ChangeByID is ChangeByEmail by id; ErrNotFound when there is no row.
	ChangeByID(ctx context.Context, id int64, decide Decide) (Subscriber, error)
	Get(ctx context.Context, id int64) (Subscriber, error)
	MarkMailSent(ctx context.Context, id int64, at time.Time) error
	DeletePending(ctx context.Context, id int64, maxSeq int) (bool, error)
}

// Config are the tunable rules.
type Config struct {
	ConsentVersion string
	ResendInterval time.Duration
}

// Business applies the newsletter rules.
type Business struct {
	store  Storer
	signer *Signer
	cfg    Config
	now    func() time.Time
}

// New returns the rules.
func New(store Storer, signer *Signer, cfg Config) *Business {
	return &Business{store: store, signer: signer, cfg: cfg, now: time.Now}
}

// Result is the outcome of a subscribe, confirm or unsubscribe.
type Result struct {
	Status     string
	Email      string
	MailQueued bool
}

// NormalizeEmail trims and lower-cases an address, so one person has one row.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// ValidateSubscription normalises n and returns every problem.
func ValidateSubscription(n NewSubscription) (NewSubscription, []string) {
	n.Email = NormalizeEmail(n.Email)
	n.Name = strings.TrimSpace(n.Name)
	n.Source = strings.TrimSpace(n.Source)
	var problems []string
	if n.Email == "" {
		problems = append(problems, "email is required")
	} else if p := feedbackbus.ValidateEmail(n.Email); p != "" {
		problems = append(problems, p)
	}
	if !n.Consent {
		problems = append(problems, "consent must be true: subscribing requires explicit consent")
	}
	if utf8.RuneCountInString(n.Name) > MaxNameChars {
		problems = append(problems, fmt.Sprintf("name must be at most %d characters", MaxNameChars))
	}
	if utf8.RuneCountInString(n.Source) > MaxSourceChars {
		problems = append(problems, fmt.Sprintf("source must be at most %d characters", MaxSourceChars))
	}
	return n, problems
}

// Subscribe records consent and starts (or nudges) the double opt-in. A
// pending address is re-mailed at most once per ResendInterval; a subscribed
// one gets no mail.
func (b *Business) Subscribe(ctx context.Context, n NewSubscription) (Result, error) {
	n, problems := ValidateSubscription(n)
	if len(problems) > 0 {
		return Result{}, &validate.Error{What: "subscription", Problems: problems}
	}
	now := b.now()
	var res Result
	decide := func(cur *Subscriber) (Plan, error) {
		res = Result{Status: StatusPending, Email: n.Email}
		consent := func(s *Subscriber) {
			s.ConsentAt, s.ConsentIP, s.ConsentVersion = now, n.ClientIP, b.cfg.ConsentVersion
			if n.Name != "" {
				s.Name = n.Name
			}
			if n.Source != "" {
				s.Source = n.Source
			}
		}
		if cur == nil {
			s := Subscriber{Email: n.Email, Status: StatusPending, MailRequestedAt: now, RequestSeq: 1}
			consent(&s)
			res.MailQueued = true
			return Plan{Write: true, Next: s, Outbox: OutboxRequestMail}, nil
		}
		s := *cur
		switch cur.Status {
		case StatusSubscribed:
			res.Status = StatusAlreadySubscribed
			return Plan{}, nil
		case StatusUnsubscribed:
			consent(&s)
			s.Status, s.ConfirmedAt, s.UnsubscribedAt = StatusPending, nil, nil
			s.MailRequestedAt, s.RequestSeq = now, cur.RequestSeq+1
			res.MailQueued = true
			return Plan{Write: true, Next: s, Outbox: OutboxRequestMail}, nil
		default: // pending
			consent(&s)
			if now.Sub(cur.MailRequestedAt) < b.cfg.ResendInterval {
				return Plan{Write: true, Next: s}, nil
			}
			s.MailRequestedAt, s.RequestSeq = now, cur.RequestSeq+1
			res.MailQueued = true
			return Plan{Write: true, Next: s, Outbox: OutboxRequestMail}, nil
		}
	}
	if _, err := b.store.ChangeByEmail(ctx, n.Email, decide); err != nil {
		return Result{}, fmt.Errorf("subscribe: %w", err)
	}
	return res, nil
}

// verify resolves a token to its subscriber id, checking the address binding
// inside the transaction.
func (b *Business) verify(text, purpose string) (Token, error) {
	if text == "" {
		return Token{}, ErrTokenInvalid
	}
	return b.signer.Verify(text, purpose, b.now())
}

// Confirm completes the opt-in of the token's address.
func (b *Business) Confirm(ctx context.Context, token string) (Result, error) {
	t, err := b.verify(token, PurposeConfirm)
	if err != nil {
		return Result{}, err
	}
	now := b.now()
	var res Result
	_, err = b.store.ChangeByID(ctx, t.SubscriberID, func(cur *Subscriber) (Plan, error) {
		if cur == nil || shortHash(cur.Email) != t.EmailHash {
			return Plan{}, ErrNotFound
		}
		res = Result{Email: cur.Email}
		switch cur.Status {
		case StatusSubscribed:
			res.Status = StatusAlreadySubscribed
			return Plan{}, nil
		case StatusUnsubscribed:
			return Plan{}, ErrUnsubscribed
		}
		s := *cur
		s.Status, s.ConfirmedAt = StatusSubscribed, &now
		res.Status = StatusSubscribed
		return Plan{Write: true, Next: s, Outbox: OutboxConfirmed}, nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("confirm: %w", err)
	}
	return res, nil
}

// Unsubscribe cancels the token's subscription (pending or confirmed); it is
// idempotent.
func (b *Business) Unsubscribe(ctx context.Context, token string) (Result, error) {
	t, err := b.verify(token, PurposeUnsubscribe)
	if err != nil {
		return Result{}, err
	}
	now := b.now()
	var res Result
	_, err = b.store.ChangeByID(ctx, t.SubscriberID, func(cur *Subscriber) (Plan, error) {
		if cur == nil || shortHash(cur.Email) != t.EmailHash {
			return Plan{}, ErrNotFound
		}
		res = Result{Email: cur.Email, Status: StatusUnsubscribed}
		if cur.Status == StatusUnsubscribed {
			return Plan{}, nil
		}
		s := *cur
		s.Status, s.UnsubscribedAt = StatusUnsubscribed, &now
		return Plan{Write: true, Next: s}, nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("unsubscribe: %w", err)
	}
	return res, nil
}

// ---- used by the opt-in workflow's activities ----

// Get returns a subscriber.
func (b *Business) Get(ctx context.Context, id int64) (Subscriber, error) {
	return b.store.Get(ctx, id)
}

// Signer returns the token signer.
func (b *Business) Signer() *Signer { return b.signer }

// MarkMailSent records that a confirmation mail went out.
func (b *Business) MarkMailSent(ctx context.Context, id int64) error {
	return b.store.MarkMailSent(ctx, id, b.now())
}

// MarkSubscribed confirms a pending subscriber from the workflow side (the
// confirm signal); it reports whether the subscriber is now subscribed.
func (b *Business) MarkSubscribed(ctx context.Context, id int64) (bool, error) {
	now := b.now()
	s, err := b.store.ChangeByID(ctx, id, func(cur *Subscriber) (Plan, error) {
		if cur == nil {
			return Plan{}, ErrNotFound
		}
		if cur.Status != StatusPending {
			return Plan{}, nil
		}
		s := *cur
		s.Status, s.ConfirmedAt = StatusSubscribed, &now
		return Plan{Write: true, Next: s}, nil
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark subscribed: %w", err)
	}
	return s.Status == StatusSubscribed, nil
}

// ExpirePending removes a subscriber that is still pending and has not asked
// for another mail since maxSeq (a later request keeps it alive).
func (b *Business) ExpirePending(ctx context.Context, id int64, maxSeq int) (bool, error) {
	return b.store.DeletePending(ctx, id, maxSeq)
}
