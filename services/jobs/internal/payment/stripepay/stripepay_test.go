package stripepay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay/stripemock"
)

const (
	apiKey        = "sk_test_coworkjobs"    //nolint:gosec // G101: a test-mode key stripe-mock accepts, no credential
	webhookSecret = "whsec_test_coworkjobs" //nolint:gosec // G101: signs the tests' own events
)

// mockURL is the stripe-mock this package started ("" when there is none;
// mockMissing says why).
var mockURL, mockMissing string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin := stripemock.Path()
	if bin == "" {
		mockMissing = stripemock.Missing
		return m.Run()
	}
	u, stop, err := stripemock.Start(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stripe-mock:", err)
		return 1
	}
	defer stop()
	mockURL = u
	return m.Run()
}

func requireMock(t *testing.T) {
	t.Helper()
	if mockURL != "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(mockMissing)
	}
	t.Skip(mockMissing)
}

// recorder is a reverse proxy in front of stripe-mock that keeps what each
// request sent, so the test sees the exact parameters stripe-go wrote.
type recorder struct {
	URL  string
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path, Auth string
	Form               url.Values
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	target, _ := url.Parse(mockURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	r := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		form, _ := url.ParseQuery(string(body))
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{Method: req.Method, Path: req.URL.Path, Auth: req.Header.Get("Authorization"), Form: form})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func newProvider(t *testing.T, base, key string) *stripepay.Provider {
	t.Helper()
	p, err := stripepay.New(stripepay.Config{SecretKey: key, APIBase: base, WebhookSecret: webhookSecret})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkout() payment.Checkout {
	return payment.Checkout{JobID: 42, JobTitle: "Community Manager", PlanID: 6, PlanName: "Featured",
		Amount: 4900, Currency: "EUR", Email: "poster@example.com",
		SuccessURL: "https://coworkjobs.example/jobs/edit?job=abc&paid=1", CancelURL: "https://coworkjobs.example/jobs/pay?job=abc"}
}

func TestStartCreatesCheckoutSession(t *testing.T) {
	requireMock(t)
	t.Parallel()
	rec := newRecorder(t)
	p := newProvider(t, rec.URL, apiKey)
	if p.Name() != "stripe" {
		t.Fatalf("name %q", p.Name())
	}
	u, err := p.Start(t.Context(), checkout())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, "https://checkout.stripe.com/") {
		t.Fatalf("redirect URL %q", u)
	}
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/checkout/sessions" || reqs[0].Auth != "Bearer "+apiKey {
		t.Fatalf("requests: %+v", reqs)
	}
	want := map[string]string{
		"mode":                                          "payment",
		"line_items[0][quantity]":                       "1",
		"line_items[0][price_data][currency]":           "eur",
		"line_items[0][price_data][unit_amount]":        "4900",
		"line_items[0][price_data][product_data][name]": "Featured listing: Community Manager",
		"client_reference_id":                           "42",
		"metadata[job_id]":                              "42",
		"customer_email":                                "poster@example.com",
		"success_url":                                   checkout().SuccessURL,
		"cancel_url":                                    checkout().CancelURL,
	}
	for k, v := range want {
		if got := reqs[0].Form.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if len(reqs[0].Form) != len(want) {
		t.Errorf("sent %d parameters, want %d: %v", len(reqs[0].Form), len(want), reqs[0].Form)
	}

	t.Run("noEmail", func(t *testing.T) {
		c := checkout()
		c.Email = ""
		if _, err := p.Start(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		reqs := rec.requests()
		if _, sent := reqs[len(reqs)-1].Form["customer_email"]; sent {
			t.Fatal("customer_email sent without an e-mail")
		}
	})
}

func TestStartErrors(t *testing.T) {
	requireMock(t)
	t.Parallel()
	rec := newRecorder(t)
	p := newProvider(t, rec.URL, apiKey)
	for name, change := range map[string]func(*payment.Checkout){
		"noAmount":   func(c *payment.Checkout) { c.Amount = 0 },
		"noCurrency": func(c *payment.Checkout) { c.Currency = "" },
		"noJob":      func(c *payment.Checkout) { c.JobID = 0 },
		"noURLs":     func(c *payment.Checkout) { c.SuccessURL = "" },
	} {
		c := checkout()
		change(&c)
		if u, err := p.Start(t.Context(), c); err == nil || u != "" {
			t.Errorf("%s: %q %v", name, u, err)
		}
	}
	if n := len(rec.requests()); n != 0 {
		t.Fatalf("an invalid checkout reached Stripe (%d requests)", n)
	}

	// Stripe's own refusal (stripe-mock refuses a key that does not look like one).
	bad := newProvider(t, rec.URL, "not-a-key")
	_, err := bad.Start(t.Context(), checkout())
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode != 401 || !strings.Contains(err.Error(), "job 42") {
		t.Fatalf("refused by Stripe: %v", err)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []stripepay.Config{
		{SecretKey: apiKey},
		{WebhookSecret: webhookSecret},
		{SecretKey: apiKey, WebhookSecret: webhookSecret, APIBase: "localhost:12111"},
	} {
		if _, err := stripepay.New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// event is a Stripe event as the API sends it, for signed test payloads.
func event(typ, version string, session map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": "evt_test_1", "object": "event", "api_version": version, "type": typ, "created": time.Now().Unix(),
		"livemode": false, "pending_webhooks": 1, "data": map[string]any{"object": session},
	})
	return b
}

func session(id, status string) map[string]any {
	return map[string]any{"id": id, "object": "checkout.session", "mode": "payment", "payment_status": status,
		"amount_total": 4900, "currency": "eur", "client_reference_id": "42", "metadata": map[string]string{"job_id": "42"}}
}

func sign(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}

func TestParseWebhook(t *testing.T) {
	t.Parallel()
	p := newProvider(t, "", apiKey) // parsing never calls Stripe
	completed := event("checkout.session.completed", stripe.APIVersion, session("cs_test_1", "paid"))

	ev, err := p.ParseWebhook(completed, sign(completed, webhookSecret, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	want := stripepay.Session{ID: "cs_test_1", JobID: "42", PaymentStatus: "paid", AmountTotal: 4900, Currency: "EUR"}
	if ev.ID != "evt_test_1" || ev.Type != "checkout.session.completed" || ev.Session == nil || *ev.Session != want || !ev.Paid() {
		t.Fatalf("%+v %+v", ev, ev.Session)
	}

	paid := map[string]bool{}
	for _, c := range []struct {
		typ, status string
	}{
		{"checkout.session.completed", "unpaid"},
		{"checkout.session.async_payment_succeeded", "paid"},
		{"checkout.session.async_payment_failed", "unpaid"},
		{"checkout.session.expired", "unpaid"},
	} {
		b := event(c.typ, stripe.APIVersion, session("cs_test_2", c.status))
		ev, err := p.ParseWebhook(b, sign(b, webhookSecret, time.Now()))
		if err != nil || ev.Session == nil {
			t.Fatalf("%s: %+v %v", c.typ, ev, err)
		}
		paid[c.typ+"/"+c.status] = ev.Paid()
	}
	if paid["checkout.session.completed/unpaid"] || !paid["checkout.session.async_payment_succeeded/paid"] ||
		paid["checkout.session.async_payment_failed/unpaid"] || paid["checkout.session.expired/unpaid"] {
		t.Fatalf("paid: %v", paid)
	}

	other := event("customer.created", stripe.APIVersion, map[string]any{"id": "cus_1", "object": "customer"})
	if ev, err := p.ParseWebhook(other, sign(other, webhookSecret, time.Now())); err != nil || ev.Session != nil || ev.Paid() {
		t.Fatalf("another event type: %+v %v", ev, err)
	}

	for name, c := range map[string]parseCase{
		"wrongSecret":  {completed, sign(completed, "whsec_other", time.Now()), stripepay.ErrSignature},
		"tooOld":       {completed, sign(completed, webhookSecret, time.Now().Add(-time.Hour)), stripepay.ErrSignature},
		"noHeader":     {completed, "", stripepay.ErrSignature},
		"badHeader":    {completed, "t=abc,v1=00", stripepay.ErrSignature},
		"bodyChanged":  {append(completed, ' '), sign(completed, webhookSecret, time.Now()), stripepay.ErrSignature},
		"otherVersion": signed(event("checkout.session.completed", "2024-06-20", session("cs_test_3", "paid")), stripepay.ErrAPIVersion),
		"otherTrain":   signed(event("checkout.session.completed", "2025-03-31.basil", session("cs_test_3", "paid")), stripepay.ErrAPIVersion),
		"notAnEvent":   signed([]byte(`{"object":"checkout.session","id":"cs_1"}`), stripepay.ErrPayload),
		"notJSON":      signed([]byte(`payment please`), stripepay.ErrPayload),
		"noSession":    signed(event("checkout.session.completed", stripe.APIVersion, map[string]any{"object": "checkout.session"}), stripepay.ErrPayload),
	} {
		if _, err := p.ParseWebhook(c.body, c.header); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

type parseCase struct {
	body   []byte
	header string
	want   error
}

// signed is a body signed with the right secret, refused for another reason.
func signed(body []byte, want error) parseCase {
	return parseCase{body, sign(body, webhookSecret, time.Now()), want}
}
