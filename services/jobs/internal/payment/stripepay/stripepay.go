// Package stripepay is the Stripe payment provider: Start opens a Stripe
// Checkout Session for a job's plan, and ParseWebhook verifies and reads the
// events Stripe sends back when the session is paid.
//
// The webhook endpoint must be created with stripe-go's API version
// (stripe.APIVersion, e.g. in the Dashboard's "API version" selector or
// `stripe webhook_endpoints create --api-version`): events of another release
// train are refused (ErrAPIVersion) rather than read with a layout this
// library was not built for.
package stripepay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
)

// Name is the provider's name as recorded with each payment.
const Name = "stripe"

// MetadataJobID is the session metadata key that carries the job's id.
const MetadataJobID = "job_id"

// Config configures the provider.
type Config struct {
	// SecretKey is the account's secret API key (sk_live_..., sk_test_...).
	SecretKey string
	// APIBase replaces https://api.stripe.com (stripe-mock in tests); "" is Stripe.
	APIBase string
	// WebhookSecret is the webhook endpoint's signing secret (whsec_...).
	WebhookSecret string
	// HTTPClient calls Stripe; nil is a client with a 30 s timeout.
	HTTPClient *http.Client
	// Sessions keeps each job's open Checkout Session (sessiondb); nil
	// keeps none, and every Start opens a new session.
	Sessions Sessions
}

// Provider is the Stripe payment.Provider.
type Provider struct {
	sc            *stripe.Client
	webhookSecret string
	sessions      Sessions
}

// OpenSession is the Checkout Session a job's payment page last opened.
type OpenSession struct {
	ID, URL   string
	ExpiresAt time.Time
	// Amount (minor units) and Currency (upper case) of the checkout it was
	// opened for.
	Amount   int64
	Currency string
}

// Sessions keeps each job's open Checkout Session, so that the payment page
// opened twice (two tabs) hands over to one session, which can be paid once,
// instead of two.
type Sessions interface {
	// Lock runs fn with the job's stored session (nil when there is none)
	// while no other Lock of the same job runs, and stores the session fn
	// returns in its place (nil keeps the stored one).
	Lock(ctx context.Context, jobID int64, fn func(cur *OpenSession) (*OpenSession, error)) error
	// Forget drops the job's stored session if it is sessionID.
	Forget(ctx context.Context, jobID int64, sessionID string) error
}

// reuseMargin is how long before its expiry a session is still handed over:
// a poster sent later would reach Stripe's expired page before paying.
const reuseMargin = 5 * time.Minute

var _ payment.Provider = (*Provider)(nil)

// New builds a provider with its own backends: nothing is read from or
// written to stripe-go's package-level state, so several providers (tests
// against their own stripe-mock) live side by side.
func New(cfg Config) (*Provider, error) {
	if cfg.SecretKey == "" || cfg.WebhookSecret == "" {
		return nil, errors.New("stripepay: a secret key and a webhook signing secret are required")
	}
	bc := &stripe.BackendConfig{
		HTTPClient: cfg.HTTPClient,
		// Errors are returned to the caller, which logs them once.
		LeveledLogger:   &stripe.LeveledLogger{Level: stripe.LevelNull},
		EnableTelemetry: stripe.Bool(false),
	}
	if bc.HTTPClient == nil {
		bc.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.APIBase != "" {
		u, err := url.Parse(cfg.APIBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("stripepay: API base %q is not an absolute http(s) URL", cfg.APIBase)
		}
		bc.URL = stripe.String(strings.TrimSuffix(cfg.APIBase, "/"))
	}
	sc := stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc)))
	return &Provider{sc: sc, webhookSecret: cfg.WebhookSecret, sessions: cfg.Sessions}, nil
}

// Name implements payment.Provider.
func (p *Provider) Name() string { return Name }

// Start implements payment.Provider: a Checkout Session in payment mode for
// one listing at the plan's price, with the job in its metadata and client
// reference, and the session's hosted page as the hand-off. With Sessions,
// the job's session that is still open for the same amount is handed over
// again instead.
func (p *Provider) Start(ctx context.Context, c payment.Checkout) (string, error) {
	if err := validate(c); err != nil {
		return "", err
	}
	if p.sessions == nil {
		s, err := p.create(ctx, c)
		if err != nil {
			return "", err
		}
		return s.URL, nil
	}
	var redirect string
	err := p.sessions.Lock(ctx, c.JobID, func(cur *OpenSession) (*OpenSession, error) {
		now := time.Now()
		if cur != nil && cur.Amount == c.Amount && cur.Currency == c.Currency && now.Add(reuseMargin).Before(cur.ExpiresAt) {
			redirect = cur.URL
			return nil, nil
		}
		if cur != nil && now.Before(cur.ExpiresAt) {
			// Still payable (another price, or about to expire): expired
			// first, so that the job never has two sessions to pay.
			if err := p.expire(ctx, cur.ID); err != nil {
				return nil, fmt.Errorf("stripe: expire checkout session %s of job %d: %w", cur.ID, c.JobID, err)
			}
		}
		s, err := p.create(ctx, c)
		if err != nil {
			return nil, err
		}
		redirect = s.URL
		return &OpenSession{ID: s.ID, URL: s.URL, ExpiresAt: time.Unix(s.ExpiresAt, 0), Amount: c.Amount, Currency: c.Currency}, nil
	})
	if err != nil {
		return "", err
	}
	return redirect, nil
}

func (p *Provider) create(ctx context.Context, c payment.Checkout) (*stripe.CheckoutSession, error) {
	jobID := strconv.FormatInt(c.JobID, 10)
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModePayment)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:   stripe.String(strings.ToLower(c.Currency)),
				UnitAmount: stripe.Int64(c.Amount),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{
					Name: stripe.String(ProductName(c)),
				},
			},
		}},
		ClientReferenceID: stripe.String(jobID),
		Metadata:          map[string]string{MetadataJobID: jobID},
		SuccessURL:        stripe.String(c.SuccessURL),
		CancelURL:         stripe.String(c.CancelURL),
	}
	if c.Email != "" {
		params.CustomerEmail = stripe.String(c.Email)
	}
	s, err := p.sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("stripe: create checkout session for job %d: %w", c.JobID, err)
	}
	if s.URL == "" {
		return nil, fmt.Errorf("stripe: checkout session %s for job %d has no URL", s.ID, c.JobID)
	}
	return s, nil
}

// expire expires an open session. Stripe refuses a session that is no longer
// open: one that has expired meanwhile is fine, one that is complete is not
// (its payment is on its way and the webhook will record it).
func (p *Provider) expire(ctx context.Context, id string) error {
	_, err := p.sc.V1CheckoutSessions.Expire(ctx, id, nil)
	if err == nil {
		return nil
	}
	s, gerr := p.sc.V1CheckoutSessions.Retrieve(ctx, id, nil)
	if gerr == nil && s.Status == stripe.CheckoutSessionStatusExpired {
		return nil
	}
	return err
}

// Paid forgets the job's stored session once sessionID has paid it, so that
// a later payment of the job (a relisting) opens a new one.
func (p *Provider) Paid(ctx context.Context, jobID int64, sessionID string) error {
	if p.sessions == nil {
		return nil
	}
	return p.sessions.Forget(ctx, jobID, sessionID)
}

// ProductName is the line item's name on Stripe's page and receipt.
func ProductName(c payment.Checkout) string {
	return c.PlanName + " listing: " + c.JobTitle
}

func validate(c payment.Checkout) error {
	var p []string
	if c.JobID < 1 {
		p = append(p, "a job id")
	}
	if c.Amount < 1 {
		p = append(p, "a positive amount")
	}
	if len(c.Currency) != 3 {
		p = append(p, "an ISO 4217 currency")
	}
	if c.SuccessURL == "" || c.CancelURL == "" {
		p = append(p, "success and cancel URLs")
	}
	if len(p) > 0 {
		return fmt.Errorf("stripepay: a checkout needs %s", strings.Join(p, ", "))
	}
	return nil
}

// Errors of ParseWebhook.
var (
	// ErrSignature: the Stripe-Signature header is missing, malformed, does
	// not sign this body with the endpoint's secret, or is too old.
	ErrSignature = errors.New("the Stripe-Signature header does not sign this body")
	// ErrAPIVersion: a signed event of another API release train than
	// stripe-go's; the webhook endpoint must be created with stripe.APIVersion.
	ErrAPIVersion = errors.New("the event's API version is not stripe-go's")
	// ErrPayload: a signed body that is not a Stripe event, or whose checkout
	// session cannot be read.
	ErrPayload = errors.New("the body is not a Stripe event")
)

// Event is what a verified webhook event says.
type Event struct {
	ID   string
	Type string
	// Session is set for checkout.session.* events.
	Session *Session
}

// Session is the part of a Checkout Session a payment needs.
type Session struct {
	ID            string
	JobID         string // metadata job_id, as sent; "" when absent
	PaymentStatus string // paid, unpaid, no_payment_required
	AmountTotal   int64  // minor units
	Currency      string // upper case
}

// Paid reports whether the event says the session's money has arrived:
// checkout.session.completed with payment_status paid, or the later
// checkout.session.async_payment_succeeded of a delayed payment method.
func (e Event) Paid() bool {
	if e.Session == nil {
		return false
	}
	switch stripe.EventType(e.Type) {
	case stripe.EventTypeCheckoutSessionCompleted:
		return e.Session.PaymentStatus == string(stripe.CheckoutSessionPaymentStatusPaid)
	case stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded:
		return true
	}
	return false
}

// ParseWebhook verifies the Stripe-Signature header over the raw body (with
// stripe-go's default tolerance of five minutes against replayed requests)
// and reads the event.
func (p *Provider) ParseWebhook(body []byte, signature string) (Event, error) {
	ev, err := webhook.ConstructEventWithOptions(body, signature, p.webhookSecret, webhook.ConstructEventOptions{})
	if err != nil {
		return Event{}, classify(body, err)
	}
	out := Event{ID: ev.ID, Type: string(ev.Type)}
	if !strings.HasPrefix(out.Type, "checkout.session.") {
		return out, nil
	}
	if ev.Data == nil || len(ev.Data.Raw) == 0 {
		return Event{}, fmt.Errorf("%w: %s has no data.object", ErrPayload, out.Type)
	}
	var s stripe.CheckoutSession
	if err := json.Unmarshal(ev.Data.Raw, &s); err != nil || s.ID == "" {
		return Event{}, fmt.Errorf("%w: %s does not hold a checkout session", ErrPayload, out.Type)
	}
	out.Session = &Session{ID: s.ID, JobID: s.Metadata[MetadataJobID], PaymentStatus: string(s.PaymentStatus),
		AmountTotal: s.AmountTotal, Currency: strings.ToUpper(string(s.Currency))}
	return out, nil
}

// classify maps ConstructEventWithOptions' errors. It checks the signature
// first and fails only with the webhook package's sentinels there, so any
// other error is about a signed body: an event of another API version, or
// not an event at all.
func classify(body []byte, err error) error {
	for _, sig := range []error{webhook.ErrNotSigned, webhook.ErrInvalidHeader, webhook.ErrNoValidSignature, webhook.ErrTooOld} {
		if errors.Is(err, sig) {
			return fmt.Errorf("%w: %w", ErrSignature, err)
		}
	}
	var head struct {
		Object     string `json:"object"`
		APIVersion string `json:"api_version"`
	}
	if json.Unmarshal(body, &head) == nil && head.Object == "event" && head.APIVersion != "" && train(head.APIVersion) != stripe.APIMajorVersion {
		return fmt.Errorf("%w: the event has API version %s, stripe-go reads %s; create the webhook endpoint with API version %s",
			ErrAPIVersion, head.APIVersion, stripe.APIVersion, stripe.APIVersion)
	}
	return fmt.Errorf("%w: %w", ErrPayload, err)
}

// train is an API version's release train: 2026-03-25.dahlia → dahlia.
func train(version string) string {
	_, t, _ := strings.Cut(version, ".")
	return t
}
