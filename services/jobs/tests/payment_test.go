package tests

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/payapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
)

const whsec = "whsec_test_jobs"

// newPayApp is the jobs service with the Stripe webhook mounted, as
// cmd/jobs mounts it when Stripe is configured.
func newPayApp(t *testing.T) *fiber.App {
	t.Helper()
	// The webhook never calls Stripe: the API base is never dialled.
	sp, err := stripepay.New(stripepay.Config{SecretKey: "sk_test_jobs", WebhookSecret: whsec, APIBase: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: baseURL, DefaultInvEmail: defInv})
	srv := web.New(webtest.Config(), testLog, "jobs")
	payapp.Routes(srv.App, payapp.Config{Log: testLog, Bus: bus, Codec: codec, Stripe: sp})
	srv.Fallback()
	return srv.App
}

// stripeEvent is an event as Stripe sends it, with a checkout session.
func stripeEvent(t *testing.T, typ, version string, session map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": "evt_" + randomID(), "object": "event", "api_version": version, "type": typ,
		"created": time.Now().Unix(), "livemode": false, "pending_webhooks": 1,
		"data": map[string]any{"object": session},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkoutSession(id string, jobID any, status string, amount int64, currency string) map[string]any {
	s := map[string]any{"id": id, "object": "checkout.session", "mode": "payment", "payment_status": status,
		"status": "complete", "amount_total": amount, "currency": currency}
	if jobID != nil {
		s["metadata"] = map[string]any{"job_id": jobID}
		s["client_reference_id"] = jobID
	}
	return s
}

// idSeq makes Stripe ids unique across test runs on one database too.
var idSeq atomic.Int64

func init() { idSeq.Store(time.Now().UnixNano()) }

func randomID() string { return itoa(idSeq.Add(1)) }

type webhookAnswer struct {
	Received bool   `json:"received"`
	Action   string `json:"action"`
}

// sendWebhook posts body through the gateway's public identity, signed with
// secret the way Stripe (and stripe-go's test helper) signs it.
func sendWebhook(t *testing.T, app *fiber.App, body []byte, secret string) (resp, webhookAnswer) {
	t.Helper()
	sig := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret}).Header
	return sendSigned(t, app, body, sig)
}

func sendSigned(t *testing.T, app *fiber.App, body []byte, sig string) (resp, webhookAnswer) {
	t.Helper()
	pub := identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.9"}
	r := do(t, app, "POST", payapp.WebhookPath, string(body), &pub, "Stripe-Signature", sig)
	var a webhookAnswer
	if r.Status == 200 {
		r.data(t, &a)
		if !a.Received {
			t.Fatalf("received false: %s", r.Body)
		}
	}
	return r, a
}

type paymentRow struct {
	Provider, Reference, Currency, Action string
	Amount                                int64
}

func paymentsOf(t *testing.T, jobID int64) []paymentRow {
	t.Helper()
	rows, err := pool.Query(bgContext, `SELECT provider, reference, amount, currency, action FROM payments WHERE job_id = $1 ORDER BY id`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []paymentRow
	for rows.Next() {
		var p paymentRow
		if err := rows.Scan(&p.Provider, &p.Reference, &p.Amount, &p.Currency, &p.Action); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func paidDraft(t *testing.T, key identity.Identity, title string, city int64) createResult {
	t.Helper()
	body := jobBody(title, city)
	body["id_plan"] = 6 // Featured, 49 EUR
	cr := create(t, key, body)
	if cr.Status != "draft" || cr.PaymentURL == nil || cr.IsPaid {
		t.Fatalf("a paid plan's job of a non-Pro space: %+v", cr)
	}
	return cr
}

func TestStripeWebhookRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	if err := checker.CheckRoutes(web.Routes(newPayApp(t))); err != nil {
		t.Fatal(err)
	}
}

// A paid checkout session publishes the job once: a replayed event, and the
// async_payment_succeeded of the same session, change nothing.
func TestStripeWebhookPublishesOnce(t *testing.T) {
	t.Parallel()
	app := newPayApp(t)
	owner := liveKey(900, 2900)
	cr := paidDraft(t, owner, "Stripe Paid Draft", 1900)
	sess := "cs_test_" + randomID()
	ev := stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession(sess, itoa(cr.JobID), "paid", 4900, "eur"))

	r, a := sendWebhook(t, app, ev, whsec)
	if r.Status != 200 || a.Action != jobbus.ActionPublished {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	_, d := getJob(t, owner, cr.JobID)
	if d.Status != "active" || !d.IsPaid || d.PaymentURL != nil || d.ViewURL == nil {
		t.Fatalf("after the payment: %+v", d)
	}
	want := []paymentRow{{Provider: "stripe", Reference: sess, Amount: 4900, Currency: "EUR", Action: jobbus.ActionPublished}}
	if got := paymentsOf(t, cr.JobID); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("payments %+v, want %+v", got, want)
	}

	// Stripe delivers at least once: the same event again (signed anew, as
	// a retry is), then the async event of the same session.
	async := stripeEvent(t, "checkout.session.async_payment_succeeded", stripe.APIVersion, checkoutSession(sess, itoa(cr.JobID), "paid", 4900, "eur"))
	for _, again := range [][]byte{ev, async} {
		r, a = sendWebhook(t, app, again, whsec)
		if r.Status != 200 || a.Action != jobbus.ActionReplayed {
			t.Fatalf("replayed: %d %s", r.Status, r.Body)
		}
	}
	_, d2 := getJob(t, owner, cr.JobID)
	if d2.Status != "active" || !d2.DateAdded.Equal(d.DateAdded) || !d2.ExpirationDate.Equal(d.ExpirationDate) {
		t.Fatalf("a replay changed the job: %+v, was %+v", d2, d)
	}
	if got := paymentsOf(t, cr.JobID); len(got) != 1 {
		t.Fatalf("%d payments after replays", len(got))
	}
}

// A payment for an expired paid-plan job relists it for a new period.
func TestStripeWebhookRelistsExpiredJob(t *testing.T) {
	t.Parallel()
	app := newPayApp(t)
	owner := liveKey(901, 2901)
	cr := paidDraft(t, owner, "Stripe Relisted Job", 1901)
	first := stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), itoa(cr.JobID), "paid", 4900, "eur"))
	if r, a := sendWebhook(t, app, first, whsec); r.Status != 200 || a.Action != jobbus.ActionPublished {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r, _, _ := transition(t, owner, "unpublish", cr.JobID); r.Status != 200 {
		t.Fatalf("unpublish: %d %s", r.Status, r.Body)
	}
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET date_added = now() - interval '70 days',
		expiration_date = now() - interval '10 days' WHERE id = $1`, cr.JobID); err != nil {
		t.Fatal(err)
	}
	if r, _, c := transition(t, owner, "relist", cr.JobID); r.Status != 409 || c.Error.Details.PaymentURL == nil {
		t.Fatalf("relist before paying: %d %s", r.Status, r.Body)
	}
	relist := stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), itoa(cr.JobID), "paid", 4900, "eur"))
	r, a := sendWebhook(t, app, relist, whsec)
	if r.Status != 200 || a.Action != jobbus.ActionRelisted {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	_, d := getJob(t, owner, cr.JobID)
	if d.Status != "active" || time.Since(d.DateAdded) > time.Minute || time.Until(d.ExpirationDate) < 59*24*time.Hour {
		t.Fatalf("relisted: %+v", d)
	}
	if n := len(paymentsOf(t, cr.JobID)); n != 2 {
		t.Fatalf("%d payments, want 2", n)
	}
}

// What the webhook refuses (400, never a 500) and what it answers 200 without
// recording anything, so that Stripe stops sending it.
func TestStripeWebhookRefusesAndIgnores(t *testing.T) {
	t.Parallel()
	app := newPayApp(t)
	owner := liveKey(902, 2902)
	cr := paidDraft(t, owner, "Stripe Unpaid Draft", 1902)
	jobID := itoa(cr.JobID)
	paid := func() []byte {
		return stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), jobID, "paid", 4900, "eur"))
	}

	t.Run("badSignature400", func(t *testing.T) {
		ev := paid()
		good := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev, Secret: whsec}).Header
		old := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev, Secret: whsec, Timestamp: time.Now().Add(-time.Hour)}).Header
		for name, c := range map[string]struct {
			body []byte
			sig  string
		}{
			"wrongSecret": {ev, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev, Secret: "whsec_other"}).Header},
			"noHeader":    {ev, ""},
			"garbage":     {ev, "v1=zz"},
			"tooOld":      {ev, old},
			"changedBody": {bytes.Replace(ev, []byte(`"amount_total":4900`), []byte(`"amount_total":1`), 1), good},
		} {
			r, _ := sendSigned(t, app, c.body, c.sig)
			if r.Status != 400 || r.Env.Error == nil || r.Env.Error.Code != "bad_request" || !strings.Contains(r.Env.Error.Message, "Stripe-Signature") {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
	})

	t.Run("badBody400", func(t *testing.T) {
		for name, body := range map[string][]byte{
			"notJSON":      []byte("not json"),
			"notAnEvent":   []byte(`{"object":"checkout.session","id":"cs_x"}`),
			"noSession":    stripeEvent(t, "checkout.session.completed", stripe.APIVersion, map[string]any{"object": "checkout.session"}),
			"otherVersion": stripeEvent(t, "checkout.session.completed", "2025-03-31.basil", checkoutSession("cs_test_"+randomID(), jobID, "paid", 4900, "eur")),
		} {
			r, _ := sendWebhook(t, app, body, whsec)
			if r.Status != 400 || r.Env.Error == nil || r.Env.Error.Code != "bad_request" {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
	})

	t.Run("ignored200", func(t *testing.T) {
		for name, c := range map[string]struct {
			body   []byte
			action string
		}{
			"unknownType":  {stripeEvent(t, "customer.created", stripe.APIVersion, map[string]any{"id": "cus_1", "object": "customer"}), payapp.ActionIgnored},
			"expired":      {stripeEvent(t, "checkout.session.expired", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), jobID, "unpaid", 4900, "eur")), payapp.ActionIgnored},
			"asyncFailed":  {stripeEvent(t, "checkout.session.async_payment_failed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), jobID, "unpaid", 4900, "eur")), payapp.ActionIgnored},
			"unpaid":       {stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), jobID, "unpaid", 4900, "eur")), payapp.ActionAwaitingPayment},
			"unknownJob":   {stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), "999999999", "paid", 4900, "eur")), payapp.ActionIgnored},
			"noJobID":      {stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), nil, "paid", 4900, "eur")), payapp.ActionIgnored},
			"jobIDNotANum": {stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession("cs_test_"+randomID(), "12abc", "paid", 4900, "eur")), payapp.ActionIgnored},
		} {
			r, a := sendWebhook(t, app, c.body, whsec)
			if r.Status != 200 || a.Action != c.action {
				t.Errorf("%s: %d %s, want action %s", name, r.Status, r.Body, c.action)
			}
		}
	})

	// None of the above touched the job.
	_, d := getJob(t, owner, cr.JobID)
	if d.Status != "draft" || d.IsPaid || len(paymentsOf(t, cr.JobID)) != 0 {
		t.Fatalf("refused or ignored events changed the job: %+v", d)
	}
	var orphans int
	if err := pool.QueryRow(bgContext, `SELECT count(*) FROM payments WHERE job_id = 999999999`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("a payment for no job was recorded: %d %v", orphans, err)
	}
}

// jobs-admin mark-paid: the invoice provider's way to record a payment.
func TestJobsAdminMarkPaid(t *testing.T) {
	t.Parallel()
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: baseURL})
	owner := liveKey(903, 2903)
	cr := paidDraft(t, owner, "Invoiced Draft", 1903)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := invoicepay.MarkPaidCommand(bgContext, bus, args, &out)
		return out.String(), err
	}

	out, err := run("-job", itoa(cr.JobID), "-reference", "INV-2026-001")
	if err != nil || !strings.Contains(out, "published, status active, is_paid true") {
		t.Fatalf("mark-paid: %q %v", out, err)
	}
	_, d := getJob(t, owner, cr.JobID)
	if d.Status != "active" || !d.IsPaid || d.PaymentURL != nil {
		t.Fatalf("after mark-paid: %+v", d)
	}
	want := paymentRow{Provider: "invoice", Reference: "INV-2026-001", Amount: 4900, Currency: "EUR", Action: jobbus.ActionPublished}
	if got := paymentsOf(t, cr.JobID); len(got) != 1 || got[0] != want {
		t.Fatalf("payments %+v, want %+v", got, want)
	}

	out, err = run("-job", itoa(cr.JobID), "-reference", "INV-2026-001")
	if err != nil || !strings.Contains(out, "already_recorded") || len(paymentsOf(t, cr.JobID)) != 1 {
		t.Fatalf("replayed mark-paid: %q %v", out, err)
	}

	t.Run("amount", func(t *testing.T) {
		other := paidDraft(t, owner, "Invoiced With Discount", 1904)
		if out, err := run("-job", itoa(other.JobID), "-reference", "INV-2026-002", "-amount", "3900"); err != nil || !strings.Contains(out, "published") {
			t.Fatalf("%q %v", out, err)
		}
		if got := paymentsOf(t, other.JobID); len(got) != 1 || got[0].Amount != 3900 || got[0].Provider != "invoice" {
			t.Fatalf("%+v", got)
		}
	})

	t.Run("errors", func(t *testing.T) {
		free := create(t, owner, jobBody("Free Plan Job", 1905))
		for name, c := range map[string]struct {
			args []string
			want string
		}{
			"noReference":   {[]string{"-job", itoa(cr.JobID)}, "-reference are required"},
			"blankRef":      {[]string{"-job", itoa(cr.JobID), "-reference", "  "}, "-reference are required"},
			"noJob":         {[]string{"-reference", "INV-X"}, "-job and"},
			"unknownJob":    {[]string{"-job", "999999999", "-reference", "INV-X"}, "job 999999999 does not exist"},
			"freePlan":      {[]string{"-job", itoa(free.JobID), "-reference", "INV-X"}, "nothing to pay"},
			"negative":      {[]string{"-job", itoa(cr.JobID), "-reference", "INV-Y", "-amount", "-5"}, "must not be negative"},
			"notANumber":    {[]string{"-job", "abc", "-reference", "INV-X"}, "invalid value"},
			"strayArgument": {[]string{"-job", itoa(cr.JobID), "-reference", "INV-X", "extra"}, "unexpected arguments"},
		} {
			if out, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %q %v, want an error with %q", name, out, err, c.want)
			}
		}
		if n := len(paymentsOf(t, free.JobID)); n != 0 {
			t.Fatalf("%d payments recorded for a free job", n)
		}
	})

}

// Without Stripe settings the provider has no hand-off: the payment page
// explains how to pay.
func TestInvoiceProvider(t *testing.T) {
	t.Parallel()
	var p payment.Provider = invoicepay.Provider{}
	u, err := p.Start(bgContext, payment.Checkout{JobID: 1, Amount: 4900, Currency: "EUR"})
	if p.Name() != "invoice" || u != "" || err != nil {
		t.Fatalf("%s %q %v", p.Name(), u, err)
	}
}
