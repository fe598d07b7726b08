// Package invoicepay is the payment provider when no card processor is
// configured (make run, or an operator who invoices): the payment page shows
// the plan and the amount and how to pay, and the operator, once the money
// is in, marks the job paid with `jobs-admin mark-paid` (MarkPaidCommand).
package invoicepay

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
)

// Name is the provider's name as recorded with each payment.
const Name = "invoice"

// Provider is the invoice payment.Provider.
type Provider struct{}

var _ payment.Provider = Provider{}

// Name implements payment.Provider.
func (Provider) Name() string { return Name }

// Start implements payment.Provider: there is no hand-off, so the payment
// page itself explains how to pay.
func (Provider) Start(context.Context, payment.Checkout) (string, error) { return "", nil }

// MarkPaid is an invoice the operator has seen paid.
type MarkPaid struct {
	JobID     int64
	Reference string // the invoice's number; one payment per reference
	// Amount in minor units; nil is the plan's price.
	Amount *int64
}

// Record records the invoice's payment for the job: a paid plan's draft is
// published, an expired job relisted, a live one marked paid. The same
// reference again changes nothing (jobbus.ActionReplayed).
func Record(ctx context.Context, bus *jobbus.Business, m MarkPaid) (jobbus.TransitionResult, error) {
	ref := strings.TrimSpace(m.Reference)
	if m.JobID < 1 || ref == "" {
		return jobbus.TransitionResult{}, errors.New("a job id and an invoice reference are required")
	}
	d, err := bus.QueryByID(ctx, m.JobID)
	if errors.Is(err, jobbus.ErrNotFound) {
		return jobbus.TransitionResult{}, fmt.Errorf("job %d does not exist", m.JobID)
	}
	if err != nil {
		return jobbus.TransitionResult{}, err
	}
	amount := int64(d.Plan.Price) * 100 // EUR, USD and GBP have cents
	if m.Amount != nil {
		amount = *m.Amount
	}
	switch {
	case m.Amount == nil && d.Plan.Price == 0:
		return jobbus.TransitionResult{}, fmt.Errorf("job %d is on the free plan %q: there is nothing to pay (give -amount to record a payment anyway)", d.ID, d.Plan.Name)
	case amount < 0:
		return jobbus.TransitionResult{}, errors.New("the amount must not be negative")
	}
	return bus.Pay(ctx, jobbus.Payment{JobID: d.ID, Provider: Name, Reference: ref, Amount: amount, Currency: d.Plan.Currency})
}

// MarkPaidCommand is `jobs-admin mark-paid -job ID -reference REF [-amount N]`:
// it records the payment and prints what it did to the job.
func MarkPaidCommand(ctx context.Context, bus *jobbus.Business, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mark-paid", flag.ContinueOnError)
	fs.SetOutput(out)
	job := fs.Int64("job", 0, "the job's id")
	ref := fs.String("reference", "", "the invoice's reference (number); marking the same reference again changes nothing")
	amount := fs.Int64("amount", -1, "the amount paid in minor units (cents); default: the plan's price × 100")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	m := MarkPaid{JobID: *job, Reference: *ref}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "amount" })
	if set {
		m.Amount = amount
	}
	if m.JobID < 1 || strings.TrimSpace(m.Reference) == "" {
		return errors.New("-job and -reference are required")
	}
	res, err := Record(ctx, bus, m)
	if err != nil {
		return err
	}
	if res.Action == jobbus.ActionReplayed {
		fmt.Fprintf(out, "job %d: already_recorded (invoice %s was marked paid before; nothing changed), status %s\n",
			res.JobID, strings.TrimSpace(m.Reference), res.Status)
		return nil
	}
	fmt.Fprintf(out, "job %d: %s, status %s, is_paid %t\n", res.JobID, res.Action, res.Status, res.Job.IsPaid)
	return nil
}
