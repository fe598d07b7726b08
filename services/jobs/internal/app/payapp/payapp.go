// Package payapp is the HTTP side of payments: POST
// /v2/payments/stripe/webhook, where Stripe reports paid Checkout Sessions.
// The route is public at the gateway; Stripe's signature over the raw body
// authenticates the caller instead of a key. Without Stripe settings the
// route answers a 404 that says why.
package payapp

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
)

// WebhookPath is Stripe's webhook endpoint.
const WebhookPath = "/v2/payments/stripe/webhook"

// Actions of a webhook answer besides the payment's own (jobbus.Action*:
// published, relisted, paid, recorded, already_recorded).
const (
	// ActionIgnored: an event that pays nothing here (another type, a
	// session without a job of ours); answered 200 so Stripe stops sending it.
	ActionIgnored = "ignored"
	// ActionAwaitingPayment: a completed session whose delayed payment
	// (SEPA debit, say) has not arrived; async_payment_succeeded will pay it.
	ActionAwaitingPayment = "awaiting_payment"
)

// NotConfiguredMessage is the 404's message when the installation has no
// Stripe settings.
const NotConfiguredMessage = "Payments by Stripe are not configured on this installation (no STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET)"

// Config wires the handler.
type Config struct {
	Log   *slog.Logger
	Bus   *jobbus.Business
	Codec *identity.Codec
	// Stripe is nil when Stripe is not configured.
	Stripe *stripepay.Provider
}

// Routes mounts the webhook behind the gateway's identity check (a public
// identity: the gateway forwards it without a key).
func Routes(app *fiber.App, cfg Config) {
	if cfg.Stripe == nil {
		app.Post(WebhookPath, cfg.Codec.Middleware(), notConfigured)
		return
	}
	h := &handlers{log: cfg.Log, bus: cfg.Bus, stripe: cfg.Stripe}
	app.Post(WebhookPath, cfg.Codec.Middleware(), h.stripeWebhook)
}

// notConfigured answers a webhook that this installation cannot read, saying
// why. Not a 5xx: the route is public, and anyone's requests would raise the
// error-rate alerts; Stripe reports a failing endpoint to its owner anyway.
func notConfigured(*fiber.Ctx) error {
	return web.NotFound(NotConfiguredMessage)
}

type handlers struct {
	log    *slog.Logger
	bus    *jobbus.Business
	stripe *stripepay.Provider
}

// webhookResult is the answer Stripe gets (it reads only the status).
type webhookResult struct {
	Received bool   `json:"received"`
	Action   string `json:"action"`
}

func (h *handlers) stripeWebhook(c *fiber.Ctx) error {
	ctx := c.UserContext()
	ev, err := h.stripe.ParseWebhook(c.Body(), c.Get("Stripe-Signature"))
	switch {
	case errors.Is(err, stripepay.ErrSignature):
		return web.BadRequest("The Stripe-Signature header is missing, malformed, too old or does not sign this body with the endpoint's secret")
	case errors.Is(err, stripepay.ErrAPIVersion):
		// Every event will fail the same way until the endpoint is fixed.
		h.log.ErrorContext(ctx, "stripe webhook: API version mismatch", "error", err)
		return web.BadRequest(err.Error())
	case err != nil:
		return web.BadRequest("The body is not a Stripe event with a readable checkout session")
	}
	log := h.log.With("stripe_event", ev.ID, "event_type", ev.Type)
	answer := func(action string) error {
		return web.OK(c, http.StatusOK, webhookResult{Received: true, Action: action})
	}
	if !ev.Paid() {
		if ev.Session != nil && ev.Type == "checkout.session.completed" {
			log.InfoContext(ctx, "stripe session completed, payment pending", "session", ev.Session.ID)
			return answer(ActionAwaitingPayment)
		}
		return answer(ActionIgnored)
	}
	s := ev.Session
	jobID, err := strconv.ParseInt(s.JobID, 10, 64)
	if err != nil || jobID < 1 {
		// Not a session of ours (another integration on the same account):
		// retrying would never change that.
		log.WarnContext(ctx, "stripe session without a job_id", "session", s.ID, "job_id", s.JobID)
		return answer(ActionIgnored)
	}
	res, err := h.bus.Pay(ctx, jobbus.Payment{JobID: jobID, Provider: stripepay.Name, Reference: s.ID,
		Amount: s.AmountTotal, Currency: s.Currency})
	var ve *validate.Error
	switch {
	case errors.Is(err, jobbus.ErrNotFound), errors.As(err, &ve):
		// The money was taken for a job that is not here (deleted, or another
		// environment's database on the same Stripe account): answering an
		// error would make Stripe retry for days without changing anything,
		// so it is logged for the operator to refund or reconcile.
		log.ErrorContext(ctx, "stripe payment not recorded: no such job here; refund or reconcile it", "session", s.ID,
			"job_id", jobID, "amount", s.AmountTotal, "currency", s.Currency, "error", err)
		return answer(ActionIgnored)
	case err != nil:
		// The database is away: an error makes Stripe send the event again.
		return err
	}
	log.InfoContext(ctx, "stripe payment", "session", s.ID, "job_id", jobID, "action", res.Action, "status", res.Status,
		"amount", s.AmountTotal, "currency", s.Currency)
	// The paid session is spent: a later payment of the job opens another.
	// On an error Stripe sends the event again, which records nothing twice.
	if err := h.stripe.Paid(ctx, jobID, s.ID); err != nil {
		return err
	}
	if p := res.Job.Plan; res.Action != jobbus.ActionReplayed && (s.AmountTotal != int64(p.Price)*100 || s.Currency != p.Currency) {
		log.WarnContext(ctx, "stripe payment differs from the plan's price", "job_id", jobID, "plan", p.ID,
			"price", p.Price, "plan_currency", p.Currency)
	}
	return answer(res.Action)
}
