// Package payment is the port to the payment providers of paid plans: a
// provider starts a payment for one job (Stripe Checkout, or an invoice the
// operator settles), and reports payments back through jobbus.Business.Pay.
package payment

import "context"

// Checkout is one payment to start: a job's plan at its price.
type Checkout struct {
	JobID    int64
	JobTitle string
	PlanID   int
	PlanName string
	// Amount is in the currency's minor units (cents).
	Amount   int64
	Currency string // ISO 4217, upper case (EUR, USD, GBP)
	Email    string // the poster's, to prefill the provider's form
	// SuccessURL and CancelURL bring the poster back to the job's pages.
	SuccessURL, CancelURL string
}

// Provider starts payments.
type Provider interface {
	// Name is the provider's name as recorded with each payment ("stripe", "invoice").
	Name() string
	// Start returns the URL to send the poster to (the provider's hosted
	// payment page), or "" when the provider has no hand-off and the
	// payment page explains how to pay (an invoice).
	Start(ctx context.Context, c Checkout) (redirectURL string, err error)
}
