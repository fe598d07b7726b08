package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/payapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay/sessiondb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay/stripemock"
)

// stripeProxy stands between the provider and stripe-mock: it counts the
// sessions created (by job) and expired, and gives each created session what
// Stripe gives it and stripe-mock's fixture does not (stripe-mock answers
// every create with the same url and an expires_at of 2009): a URL of its
// own and an expiry 24 hours ahead, Stripe's default.
type stripeProxy struct {
	URL     string
	mu      sync.Mutex
	created map[string][]string // job_id → session ids, in order
	expired []string
}

func newStripeProxy(t *testing.T, mock string) *stripeProxy {
	t.Helper()
	target, _ := url.Parse(mock)
	p := &stripeProxy{created: map[string][]string{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Del("Accept-Encoding") // a body this proxy can rewrite
	}}
	rp.ModifyResponse = func(res *http.Response) error {
		req := res.Request
		if req.Method != http.MethodPost || res.StatusCode != http.StatusOK {
			return nil
		}
		if id, ok := strings.CutPrefix(req.URL.Path, "/v1/checkout/sessions/"); ok && strings.HasSuffix(id, "/expire") {
			p.mu.Lock()
			p.expired = append(p.expired, strings.TrimSuffix(id, "/expire"))
			p.mu.Unlock()
			return nil
		}
		if req.URL.Path != "/v1/checkout/sessions" {
			return nil
		}
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		var s map[string]any
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		id, _ := s["id"].(string)
		s["url"] = "https://checkout.stripe.com/c/pay/" + id
		s["expires_at"] = time.Now().Add(24 * time.Hour).Unix()
		job := req.Header.Get("X-Test-Job-ID")
		p.mu.Lock()
		p.created[job] = append(p.created[job], id)
		p.mu.Unlock()
		if body, err = json.Marshal(s); err != nil {
			return err
		}
		res.Body = io.NopCloser(bytes.NewReader(body))
		res.ContentLength = int64(len(body))
		res.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	// stripe-mock does not echo the metadata: the job is read from the form.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if form, err := url.ParseQuery(string(body)); err == nil {
			r.Header.Set("X-Test-Job-ID", form.Get("metadata[job_id]"))
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *stripeProxy) sessionsOf(jobID int64) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.created[itoa(jobID)]...)
}

func (p *stripeProxy) expiredSessions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.expired...)
}

type storedSession struct {
	ID, URL   string
	ExpiresAt time.Time
}

func storedSessionOf(t *testing.T, jobID int64) *storedSession {
	t.Helper()
	var s storedSession
	err := pool.QueryRow(bgContext, `SELECT session_id, url, expires_at FROM stripe_checkout_sessions WHERE job_id = $1`, jobID).
		Scan(&s.ID, &s.URL, &s.ExpiresAt)
	if err != nil {
		if strings.Contains(err.Error(), "no rows") {
			return nil
		}
		t.Fatal(err)
	}
	return &s
}

// A poster who opens the payment page in two tabs is sent to one Checkout
// Session from both, so that the job cannot be paid twice; a session that
// has expired, or was opened for another price, is replaced, and a paid one
// is forgotten.
func TestStripeCheckoutSessionReused(t *testing.T) {
	proxy := newStripeProxy(t, stripemock.Need(t))
	provider, err := stripepay.New(stripepay.Config{SecretKey: "sk_test_jobs", WebhookSecret: whsec, APIBase: proxy.URL,
		Sessions: sessiondb.New(pool)})
	if err != nil {
		t.Fatal(err)
	}
	pages := newPagesApp(baseURL, provider, pagesSecret)
	owner := liveKey(910, 2910)

	// pay opens the payment page in a new tab and presses Pay.
	pay := func(t *testing.T, cr createResult) string {
		t.Helper()
		tab := &poster{t: t, app: pages}
		hash := hashOf(t, *cr.PaymentURL)
		_, token := tab.open(pagePath(t, *cr.PaymentURL))
		r := tab.post("/jobs/pay", url.Values{"_csrf": {token["/jobs/pay"]}, "job": {hash}})
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") == "" {
			t.Fatalf("pay: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
		}
		return r.Header.Get("Location")
	}

	cr := paidDraft(t, owner, "Two Tabs Draft", 1910)
	first, second := pay(t, cr), pay(t, cr)
	sessions := proxy.sessionsOf(cr.JobID)
	if len(sessions) != 1 || first != second || first != "https://checkout.stripe.com/c/pay/"+sessions[0] {
		t.Fatalf("two tabs: %q and %q, sessions created %v", first, second, sessions)
	}
	stored := storedSessionOf(t, cr.JobID)
	if stored == nil || stored.ID != sessions[0] || stored.URL != first || time.Until(stored.ExpiresAt) < 23*time.Hour {
		t.Fatalf("stored %+v", stored)
	}

	t.Run("concurrentTabs", func(t *testing.T) {
		cr := paidDraft(t, owner, "Concurrent Tabs Draft", 1911)
		got := make([]string, 4)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i] = pay(t, cr) })
		}
		wg.Wait()
		if n := len(proxy.sessionsOf(cr.JobID)); n != 1 || got[0] != got[1] || got[1] != got[2] || got[2] != got[3] {
			t.Fatalf("%d sessions for %v", n, got)
		}
	})

	t.Run("expiredReplaced", func(t *testing.T) {
		if _, err := pool.Exec(bgContext, `UPDATE stripe_checkout_sessions SET expires_at = now() - interval '1 minute' WHERE job_id = $1`, cr.JobID); err != nil {
			t.Fatal(err)
		}
		again := pay(t, cr)
		sessions := proxy.sessionsOf(cr.JobID)
		if len(sessions) != 2 || again == first || again != "https://checkout.stripe.com/c/pay/"+sessions[1] {
			t.Fatalf("after expiry: %q, sessions %v", again, sessions)
		}
		if s := storedSessionOf(t, cr.JobID); s == nil || s.ID != sessions[1] {
			t.Fatalf("stored %+v", s)
		}
		if exp := proxy.expiredSessions(); len(exp) != 0 {
			t.Fatalf("an expired session was expired again at Stripe: %v", exp)
		}
		if third := pay(t, cr); third != again || len(proxy.sessionsOf(cr.JobID)) != 2 {
			t.Fatalf("the new session is not reused: %q", third)
		}
	})

	t.Run("otherPriceExpiresTheOpenOne", func(t *testing.T) {
		open := storedSessionOf(t, cr.JobID)
		if _, err := pool.Exec(bgContext, `UPDATE stripe_checkout_sessions SET amount = amount + 100 WHERE job_id = $1`, cr.JobID); err != nil {
			t.Fatal(err)
		}
		pay(t, cr)
		sessions := proxy.sessionsOf(cr.JobID)
		if exp := proxy.expiredSessions(); len(exp) != 1 || exp[0] != open.ID || len(sessions) != 3 {
			t.Fatalf("expired %v, sessions %v (open was %s)", exp, sessions, open.ID)
		}
	})

	t.Run("paidSessionForgotten", func(t *testing.T) {
		srv := web.New(webtest.Config(), testLog, "jobs")
		payapp.Routes(srv.App, payapp.Config{Log: testLog, Bus: newBus(baseURL, dirURL), Codec: codec, Stripe: provider})
		srv.Fallback()
		paid := storedSessionOf(t, cr.JobID)
		ev := stripeEvent(t, "checkout.session.completed", stripe.APIVersion, checkoutSession(paid.ID, itoa(cr.JobID), "paid", 4900, "eur"))
		if r, a := sendWebhook(t, srv.App, ev, whsec); r.Status != 200 || a.Action != "published" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if s := storedSessionOf(t, cr.JobID); s != nil {
			t.Fatalf("the paid session is still stored: %+v", s)
		}
	})
}
