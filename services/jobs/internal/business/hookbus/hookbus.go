// Package hookbus holds the rules of webhook endpoints: who owns one, what
// a valid endpoint is, secrets and their rotation, and the owner's requests
// about deliveries (ping, redeliver, recover). Delivery itself runs in
// Temporal (workflows/webhook); each endpoint reads job_events from its own
// position (eventbus, ReaderID).
package hookbus

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Limits and durations of the endpoints' rules.
const (
	MaxURLLen         = 2000
	MaxDescriptionLen = 500
	MaxEndpoints      = 20 // per owner
	// RotationOverlap is how long a replaced secret keeps signing beside the new one.
	RotationOverlap = 24 * time.Hour
	// MaxRecover bounds the deliveries one recover request queues.
	MaxRecover = 10000
	// SecretPrefix starts every secret (the Standard Webhooks form).
	SecretPrefix = "whsec_"
	// TypePing is the type of a ping's delivery.
	TypePing = "webhook.ping"
)

// Sentinel errors the handlers map to envelope codes.
var (
	ErrNotFound = errors.New("not found")
	ErrTooMany  = errors.New("too many endpoints")
)

// Owner is whose endpoints a caller manages: a space key its space's, a key
// without a space its own.
type Owner struct {
	SpaceID int64
	KeyID   int64
}

// OwnerOf is caller's owner.
func OwnerOf(c jobbus.Caller) Owner { return Owner{SpaceID: c.SpaceID, KeyID: c.KeyID} }

// Endpoint is one registered receiver.
type Endpoint struct {
	ID             int64
	SpaceID, KeyID int64
	URL            string
	Description    string
	Events         []string
	Email          *string
	Enabled        bool
	DisabledReason *string
	FailingSince   *time.Time
	// OldSecretUntil is set while a replaced secret still signs.
	OldSecretUntil *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Secret is filled only when it is shown: at creation and rotation.
	Secret string
}

// Input is a create or update request after decoding; nil fields are absent.
type Input struct {
	URL, Description, Email *string
	Events                  *[]string
	Enabled                 *bool
	// ClearEmail: email was sent as null.
	ClearEmail bool
}

// Delivery is one message to one endpoint, with its last attempt.
type Delivery struct {
	ID             int64
	EndpointID     int64
	EventID        *string
	MsgID          string
	Type           string
	JobID          int64
	Version        int64
	OccurredAt     time.Time
	Replay         bool
	Status         string
	Attempts       int
	ResponseStatus *int
	ResponseBody   *string
	LatencyMS      *int
	LastError      *string
	NextTryAt      *time.Time
	CreatedAt      time.Time
	FinishedAt     *time.Time
}

// Storer is the storage of endpoints and deliveries. Every call that names
// an endpoint finds it only among owner's (ErrNotFound otherwise).
type Storer interface {
	Count(ctx context.Context, owner Owner) (int, error)
	Create(ctx context.Context, owner Owner, e Endpoint) (Endpoint, error)
	List(ctx context.Context, owner Owner) ([]Endpoint, error)
	Get(ctx context.Context, owner Owner, id int64) (Endpoint, error)
	Update(ctx context.Context, owner Owner, id int64, in Input) (Endpoint, error)
	Delete(ctx context.Context, owner Owner, id int64) error
	Rotate(ctx context.Context, owner Owner, id int64, secret string, overlap time.Duration) (Endpoint, error)
	// Ping queues a ping delivery; Redeliver a copy of a delivery; Recover
	// the endpoint's events since a time (at most max), reporting how many.
	Ping(ctx context.Context, owner Owner, id int64, msgID string) (Delivery, error)
	Redeliver(ctx context.Context, owner Owner, id, deliveryID int64) (Delivery, error)
	Recover(ctx context.Context, owner Owner, id int64, since time.Time, max int) (int, error)
	// Deliveries are the endpoint's newest deliveries with id below before (0: any).
	Deliveries(ctx context.Context, owner Owner, id int64, before int64, limit int) ([]Delivery, error)
}

// Config is what the rules need from the configuration.
type Config struct {
	// AllowHTTP lets endpoints use plain http (an operator's choice; make run).
	AllowHTTP bool
	// Allow lists the special addresses deliveries may reach
	// (WEBHOOKS_ALLOW_ADDRESSES): a URL naming another one literally is
	// refused at registration, as delivery would refuse it.
	Allow []netip.Prefix
}

// Business applies the endpoint rules.
type Business struct {
	store Storer
	cfg   Config
	now   func() time.Time
}

// New returns the rules over store.
func New(store Storer, cfg Config) *Business {
	return &Business{store: store, cfg: cfg, now: time.Now}
}

// Create registers an endpoint and returns it with its secret (shown once).
func (b *Business) Create(ctx context.Context, owner Owner, in Input) (Endpoint, error) {
	var p []string
	e := Endpoint{SpaceID: owner.SpaceID, KeyID: owner.KeyID, Enabled: true}
	if in.URL == nil {
		p = append(p, "url is required")
	} else {
		e.URL = b.checkURL(*in.URL, &p)
	}
	if in.Events == nil {
		p = append(p, "events is required: one or more of "+strings.Join(jobbus.EventTypes, ", "))
	} else {
		e.Events = checkEvents(*in.Events, &p)
	}
	if in.Description != nil {
		e.Description = checkDescription(*in.Description, &p)
	}
	if in.Email != nil {
		e.Email = checkEmail(*in.Email, &p)
	}
	if in.Enabled != nil {
		p = append(p, "enabled: a new endpoint is enabled; disable it with PATCH")
	}
	if len(p) > 0 {
		return Endpoint{}, &validate.Error{What: "webhook", Problems: p}
	}
	n, err := b.store.Count(ctx, owner)
	if err != nil {
		return Endpoint{}, err
	}
	if n >= MaxEndpoints {
		return Endpoint{}, ErrTooMany
	}
	if e.Secret, err = NewSecret(); err != nil {
		return Endpoint{}, err
	}
	return b.store.Create(ctx, owner, e)
}

// List returns owner's endpoints (without secrets).
func (b *Business) List(ctx context.Context, owner Owner) ([]Endpoint, error) {
	return b.store.List(ctx, owner)
}

// Get returns one of owner's endpoints.
func (b *Business) Get(ctx context.Context, owner Owner, id int64) (Endpoint, error) {
	return b.store.Get(ctx, owner, id)
}

// Update changes what in names; enabling clears the reason of a disable.
func (b *Business) Update(ctx context.Context, owner Owner, id int64, in Input) (Endpoint, error) {
	var p []string
	if in.URL != nil {
		u := b.checkURL(*in.URL, &p)
		in.URL = &u
	}
	if in.Events != nil {
		evs := checkEvents(*in.Events, &p)
		in.Events = &evs
	}
	if in.Description != nil {
		d := checkDescription(*in.Description, &p)
		in.Description = &d
	}
	if in.Email != nil {
		in.Email = checkEmail(*in.Email, &p)
	}
	if len(p) > 0 {
		return Endpoint{}, &validate.Error{What: "webhook", Problems: p}
	}
	return b.store.Update(ctx, owner, id, in)
}

// Delete removes one of owner's endpoints and its deliveries.
func (b *Business) Delete(ctx context.Context, owner Owner, id int64) error {
	return b.store.Delete(ctx, owner, id)
}

// RotateSecret gives the endpoint a new secret (returned, shown once); the
// old one signs beside it for RotationOverlap.
func (b *Business) RotateSecret(ctx context.Context, owner Owner, id int64) (Endpoint, error) {
	s, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	return b.store.Rotate(ctx, owner, id, s, RotationOverlap)
}

// Ping queues a webhook.ping delivery to the endpoint.
func (b *Business) Ping(ctx context.Context, owner Owner, id int64) (Delivery, error) {
	var r [12]byte
	if _, err := rand.Read(r[:]); err != nil {
		return Delivery{}, fmt.Errorf("ping id: %w", err)
	}
	return b.store.Ping(ctx, owner, id, "ping_"+base64.RawURLEncoding.EncodeToString(r[:]))
}

// Redeliver queues a delivery again (same message id).
func (b *Business) Redeliver(ctx context.Context, owner Owner, id, deliveryID int64) (Delivery, error) {
	return b.store.Redeliver(ctx, owner, id, deliveryID)
}

// Recover queues again every event the endpoint subscribes to since since
// (within the events' retention) and reports how many.
func (b *Business) Recover(ctx context.Context, owner Owner, id int64, since time.Time) (int, error) {
	if since.Before(b.now().Add(-jobbus.Retention)) || since.After(b.now()) {
		return 0, &validate.Error{What: "recover", Problems: []string{
			fmt.Sprintf("since must be within the last %d days (the events kept) and not in the future", int(jobbus.Retention.Hours()/24))}}
	}
	return b.store.Recover(ctx, owner, id, since, MaxRecover)
}

// Deliveries returns the endpoint's newest deliveries before the id before.
func (b *Business) Deliveries(ctx context.Context, owner Owner, id, before int64, limit int) ([]Delivery, error) {
	return b.store.Deliveries(ctx, owner, id, before, limit)
}

// NewSecret is a fresh endpoint secret: whsec_ and 24 random bytes in base64.
func NewSecret() (string, error) {
	var k [24]byte
	if _, err := rand.Read(k[:]); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(k[:]), nil
}

func (b *Business) checkURL(raw string, p *[]string) string {
	u, why := outbound.Target{MaxLen: MaxURLLen, AllowHTTP: b.cfg.AllowHTTP, Allow: b.cfg.Allow,
		Empty: "url is required", Example: "https://example.com/hooks/coworkjobs",
		PlainHTTP: "this server does not deliver over plain http", Refused: "deliveries are not sent there"}.CheckURL(raw)
	if why != "" {
		*p = append(*p, why)
	}
	return u
}

func checkEvents(evs []string, p *[]string) []string {
	if len(evs) == 0 {
		*p = append(*p, "events must name one or more of "+strings.Join(jobbus.EventTypes, ", "))
		return nil
	}
	var out []string
	for _, e := range evs {
		if !slices.Contains(jobbus.EventTypes, e) {
			*p = append(*p, fmt.Sprintf("events: %q is not an event type (one of %s)", truncate(e, 50), strings.Join(jobbus.EventTypes, ", ")))
			return nil
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func checkDescription(d string, p *[]string) string {
	switch {
	case !utf8.ValidString(d) || strings.ContainsFunc(d, unicode.IsControl):
		*p = append(*p, "description must be printable text")
	case utf8.RuneCountInString(d) > MaxDescriptionLen:
		*p = append(*p, fmt.Sprintf("description must be at most %d characters", MaxDescriptionLen))
	}
	return strings.TrimSpace(d)
}

func checkEmail(e string, p *[]string) *string {
	e = strings.TrimSpace(e)
	if a, err := mail.ParseAddress(e); err != nil || a.Address != e || len(e) > 254 {
		*p = append(*p, "email must be a bare e-mail address, e.g. ops@example.com")
		return nil
	}
	return &e
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// ReaderID is the endpoint's reader of the event log (eventbus): its
// position is what the endpoint has been sent.
func ReaderID(endpointID int64) string { return "webhook:" + strconv.FormatInt(endpointID, 10) }
