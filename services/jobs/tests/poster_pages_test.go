package tests

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
)

// The poster's pages: publishing, pausing, editing, unpublishing and paying
// through the edit link.

// A free plan's draft is published through its edit page: the Publish form,
// then the page shows it active and the public page answers.
func TestPublishFreeDraftThroughEditForm(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1740, 2740), jobBody("Publish Through Form", 1740))
	if cr.Status != "draft" || cr.PaymentURL != nil {
		t.Fatalf("fixture %+v", cr)
	}
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	page, tokens := p.open(pagePath(t, cr.EditURL))
	if page.Status != 200 || !strings.Contains(page.Body, `<dd id="status">draft</dd>`) || !strings.Contains(page.Body, `id="publish"`) {
		t.Fatalf("edit page: %d %s", page.Status, page.Body)
	}
	r := p.post("/jobs/publish", url.Values{"_csrf": {tokens["/jobs/publish"]}, "job": {hash}})
	if r.Status != 303 || r.Header.Get("Location") != "/jobs/edit?done=published&job="+hash {
		t.Fatalf("publish: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	page, _ = p.open(r.Header.Get("Location"))
	if !strings.Contains(page.Body, `<dd id="status">active</dd>`) || !strings.Contains(page.Body, "The job is published.") ||
		strings.Contains(page.Body, `id="publish"`) {
		t.Fatalf("after publish: %s", page.Body)
	}
	if r := pageDo(t, appPages(), http.MethodGet, "/jobs/"+cr.PageURL, nil); r.Status != 200 {
		t.Fatalf("public page after publish: %d", r.Status)
	}
	// Publishing again changes nothing.
	r = p.post("/jobs/publish", url.Values{"_csrf": {tokens["/jobs/publish"]}, "job": {hash}})
	if r.Status != 303 || !strings.Contains(r.Header.Get("Location"), "done=already_active") {
		t.Fatalf("publish again: %d %q", r.Status, r.Header.Get("Location"))
	}
}

// The poster pauses, resumes and (once expired) relists through the page:
// each button shows only in the state it applies to.
func TestPauseResumeRelistThroughEditPage(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1745, 1745), jobBody("Pause Through Form", 1745)) // a Pro space: active
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	steps := []struct{ button, status, notice, next string }{
		{"pause", "paused", "The job is paused", "resume"},
		{"resume", "active", "The job is listed again; its end date moved", "pause"},
	}
	page, tokens := p.open(pagePath(t, cr.EditURL))
	if !strings.Contains(page.Body, `id="pause"`) || strings.Contains(page.Body, `id="resume"`) || strings.Contains(page.Body, `id="relist"`) {
		t.Fatalf("an active job's page: %s", page.Body)
	}
	for _, s := range steps {
		r := p.post("/jobs/"+s.button, url.Values{"_csrf": {tokens["/jobs/"+s.button]}, "job": {hash}})
		if r.Status != 303 {
			t.Fatalf("%s: %d %s", s.button, r.Status, r.Body)
		}
		page, tokens = p.open(r.Header.Get("Location"))
		if !strings.Contains(page.Body, `<dd id="status">`+s.status+`</dd>`) || !strings.Contains(page.Body, s.notice) ||
			!strings.Contains(page.Body, `id="`+s.next+`"`) || strings.Contains(page.Body, `id="`+s.button+`"`) {
			t.Fatalf("after %s: %s", s.button, page.Body)
		}
		if st := jobStatus(t, cr.JobID); st != s.status {
			t.Fatalf("after %s: stored status %s", s.button, st)
		}
	}
	// Expired: relist it.
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET status = 'expired' WHERE id = $1`, cr.JobID); err != nil {
		t.Fatal(err)
	}
	page, tokens = p.open(pagePath(t, cr.EditURL))
	if !strings.Contains(page.Body, `id="relist"`) || strings.Contains(page.Body, `id="pause"`) {
		t.Fatalf("an expired job's page: %s", page.Body)
	}
	r := p.post("/jobs/relist", url.Values{"_csrf": {tokens["/jobs/relist"]}, "job": {hash}})
	if r.Status != 303 || !strings.Contains(r.Header.Get("Location"), "done=relisted") || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("relist: %d %q", r.Status, r.Header.Get("Location"))
	}
	// Without the CSRF token nothing happens.
	if r := p.post("/jobs/pause", url.Values{"job": {hash}}); r.Status != 403 || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("pause without a token: %d", r.Status)
	}
}

// A paid plan's draft cannot be published before it is paid: the page says
// so (409) and links to the payment page, which shows plan and amount.
func TestPublishPaidDraftPointsToPayment(t *testing.T) {
	t.Parallel()
	body := jobBody("Paid Draft", 1750)
	body["id_plan"] = 6
	cr := create(t, liveKey(1750, 2750), body)
	if cr.Status != "draft" || cr.PaymentURL == nil {
		t.Fatalf("fixture %+v", cr)
	}
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	page, tokens := p.open(pagePath(t, cr.EditURL))
	if !strings.Contains(page.Body, `id="pay" href="/jobs/pay?job=`+hash+`"`) || !strings.Contains(page.Body, "Featured · 49.00 EUR") {
		t.Fatalf("edit page of a paid draft: %s", page.Body)
	}
	r := p.post("/jobs/publish", url.Values{"_csrf": {tokens["/jobs/publish"]}, "job": {hash}})
	if r.Status != 409 || !strings.Contains(r.Body, "complete the payment on the payment page") ||
		!strings.Contains(r.Body, `href="`+*cr.PaymentURL+`">Go to the payment page`) {
		t.Fatalf("publish unpaid: %d %s", r.Status, r.Body)
	}
	if s := jobStatus(t, cr.JobID); s != "draft" {
		t.Fatalf("status %s", s)
	}
}

// A bad edit re-renders the form with every problem (422) and what was
// sent, and changes nothing; a good one is saved and renames the page.
func TestEditFormShowsProblems(t *testing.T) {
	t.Parallel()
	body := jobBody("Edit Me", 1760)
	body["sal_min"], body["sal_max"] = 30000, 40000
	cr := create(t, liveKey(1760, 1760), body)
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	page, tokens := p.open(pagePath(t, cr.EditURL))
	for _, want := range []string{`name="title" value="Edit Me"`, `<option value="fulltime" selected>`, `name="sal_min" min="0" value="30000"`,
		`&lt;p&gt;Run the &lt;strong&gt;community&lt;/strong&gt;.&lt;/p&gt;</textarea>`, `<option value="EUR" selected>`} {
		if !strings.Contains(page.Body, want) {
			t.Fatalf("edit form lacks %q:\n%s", want, page.Body)
		}
	}
	form := func(kv ...string) url.Values {
		f := url.Values{"_csrf": {tokens["/jobs/edit"]}, "job": {hash}, "title": {"Edit Me"}, "company": {"Acme Coworking"},
			"description": {"<p>Text</p>"}, "job_type": {"fulltime"}, "tags": {"a, b"}, "currency": {"EUR"},
			"sal_min": {"30000"}, "sal_max": {"40000"}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	tests := []struct {
		name  string
		form  url.Values
		wants []string
	}{
		{"rules", form("title", "  ", "job_type", "boss", "apply_url", "ftp://x", "sal_min", "50000", "description", "<script>x</script>"),
			[]string{"title is required", "job_type must be one of", "apply_url must be an absolute", "sal_min must not exceed sal_max", "description has no text left"}},
		{"notNumbers", form("sal_min", "lots", "sal_max", "1e3"), []string{"sal_min must be a whole number", "sal_max must be a whole number"}},
		{"currency", form("currency", "XYZ", "title", "<b>Sent</b>"), []string{"currency must be one of", `value="&lt;b&gt;Sent&lt;/b&gt;"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := p.post("/jobs/edit", tc.form)
			if r.Status != 422 || !strings.Contains(r.Body, `id="problems"`) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			for _, w := range tc.wants {
				if !strings.Contains(r.Body, w) {
					t.Errorf("the form does not show %q", w)
				}
			}
		})
	}
	if _, d := getJob(t, liveKey(1760, 1760), cr.JobID); d.Title != "Edit Me" {
		t.Fatalf("a refused edit changed the job: %+v", d)
	}

	r := p.post("/jobs/edit", form("title", "Edited Title", "is_remote", "1", "sal_min", "", "sal_max", ""))
	if r.Status != 303 || r.Header.Get("Location") != "/jobs/edit?done=saved&job="+hash {
		t.Fatalf("save: %d %q %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	page, _ = p.open(r.Header.Get("Location"))
	if !strings.Contains(page.Body, "Your changes are saved.") || !strings.Contains(page.Body, `name="sal_min" min="0" value=""`) ||
		!strings.Contains(page.Body, `<option value="remote" selected>`) || !strings.Contains(page.Body, `<option value="year" selected>`) {
		t.Fatalf("after save: %s", page.Body)
	}
	// The old address now leads to the new one, whose posting has no salary.
	old := pageDo(t, appPages(), http.MethodGet, "/jobs/"+cr.PageURL, nil)
	if old.Status != 301 || !strings.HasPrefix(old.Header.Get("Location"), "/jobs/edited-title-") {
		t.Fatalf("old address: %d %q", old.Status, old.Header.Get("Location"))
	}
	pub := pageDo(t, appPages(), http.MethodGet, old.Header.Get("Location"), nil)
	if ld := readLD(t, pub.Body); ld.Title != "Edited Title" || ld.BaseSalary != nil || ld.JobLocationType != "TELECOMMUTE" {
		t.Fatalf("posting after the edit: %+v", ld)
	}
}

// The unpublish link: a confirmation page, then the job is expired and its
// public page is gone; doing it again says so.
func TestUnpublishThroughItsPage(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1770, 1770), jobBody("Unpublish Page", 1770))
	hash := hashOf(t, cr.UnpublishURL)
	p := &poster{t: t, app: appPages()}
	page, tokens := p.open(pagePath(t, cr.UnpublishURL))
	if page.Status != 200 || !strings.Contains(page.Body, `id="unpublish"`) || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("confirm page: %d %s", page.Status, page.Body)
	}
	r := p.post("/jobs/unpublish", url.Values{"_csrf": {tokens["/jobs/unpublish"]}, "job": {hash}})
	if r.Status != 200 || !strings.Contains(r.Body, `<dd id="status">expired</dd>`) || !strings.Contains(r.Body, "no longer listed") {
		t.Fatalf("unpublish: %d %s", r.Status, r.Body)
	}
	if s := jobStatus(t, cr.JobID); s != "expired" {
		t.Fatalf("status %s", s)
	}
	if g := pageDo(t, appPages(), http.MethodGet, "/jobs/"+cr.PageURL, nil); g.Status != 410 {
		t.Fatalf("public page: %d", g.Status)
	}
	r = p.post("/jobs/unpublish", url.Values{"_csrf": {tokens["/jobs/unpublish"]}, "job": {hash}})
	if r.Status != 200 || !strings.Contains(r.Body, "already unpublished") {
		t.Fatalf("again: %d %s", r.Status, r.Body)
	}
	page, _ = p.open(pagePath(t, cr.UnpublishURL))
	if strings.Contains(page.Body, `id="unpublish"`) || !strings.Contains(page.Body, `<span id="status">expired</span>`) {
		t.Fatalf("confirm page of an expired job: %s", page.Body)
	}
}

// recordingProvider stands for a card processor's hosted page (Stripe's is
// tested with stripe-mock by the payment provider's own tests).
type recordingProvider struct {
	mu       sync.Mutex
	got      []payment.Checkout
	redirect string
	err      error
}

func (r *recordingProvider) Name() string { return "recording" }
func (r *recordingProvider) Start(_ context.Context, c payment.Checkout) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, c)
	return r.redirect, r.err
}

// The payment link: plan and amount, then the provider's hand-off (303 to
// its page) or, without one, the invoice text.
func TestPayPage(t *testing.T) {
	t.Parallel()
	body := jobBody("Pay Page", 1780)
	body["id_plan"] = 7
	cr := create(t, liveKey(1780, 2780), body)
	hash := hashOf(t, *cr.PaymentURL)
	free := create(t, liveKey(1780, 2780), jobBody("Free Pay Page", 1780))

	hosted := &recordingProvider{redirect: "https://pay.example/session/abc"}
	// A provider that quotes the checkout's URLs in its error.
	down := &recordingProvider{err: errors.New("provider down for https://x/jobs/edit?job=" + hash)}
	var logs bytes.Buffer
	tests := []struct {
		name     string
		provider payment.Provider
		status   int
		location string
		text     string
	}{
		{"nilProviderInvoice", nil, 200, "", `id="invoice"`},
		{"invoiceProvider", invoicepay.Provider{}, 200, "", `id="invoice"`},
		{"hostedRedirect303", hosted, 303, "https://pay.example/session/abc", ""},
		{"providerDown502", down, 502, "", "Nothing was charged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &poster{t: t, app: newPagesAppLog(baseURL, tc.provider, pagesSecret, slog.New(slog.NewTextHandler(&logs, nil)))}
			page, tokens := p.open(pagePath(t, *cr.PaymentURL))
			for _, want := range []string{`<dd id="plan">Premium</dd>`, `<dd id="amount">99.00 EUR</dd>`, `id="pay"`} {
				if !strings.Contains(page.Body, want) {
					t.Fatalf("pay page lacks %q: %s", want, page.Body)
				}
			}
			if !strings.Contains(page.Header.Get("Content-Security-Policy"), "form-action 'self' https:") {
				t.Fatalf("the pay form cannot hand off: %q", page.Header.Get("Content-Security-Policy"))
			}
			r := p.post("/jobs/pay", url.Values{"_csrf": {tokens["/jobs/pay"]}, "job": {hash}})
			if r.Status != tc.status || r.Header.Get("Location") != tc.location || !strings.Contains(r.Body, tc.text) {
				t.Fatalf("%d %q %s", r.Status, r.Header.Get("Location"), r.Body)
			}
		})
	}
	// The failure is logged, and the edit hash is not.
	if !strings.Contains(logs.String(), "start payment") || strings.Contains(logs.String(), hash) {
		t.Fatalf("logs:\n%s", logs.String())
	}
	want := payment.Checkout{JobID: cr.JobID, JobTitle: "Pay Page", PlanID: 7, PlanName: "Premium", Amount: 9900, Currency: "EUR",
		Email: defInv, SuccessURL: baseURL + "/jobs/edit?job=" + hash + "&paid=1", CancelURL: baseURL + "/jobs/pay?job=" + hash}
	if len(hosted.got) != 1 || hosted.got[0] != want {
		t.Fatalf("checkout %+v\nwant %+v", hosted.got, want)
	}
	if s := jobStatus(t, cr.JobID); s != "draft" {
		t.Fatalf("starting a payment changed the status: %s", s)
	}
	// The edit page the provider sends the poster back to.
	p := &poster{t: t, app: appPages()}
	if page, _ := p.open("/jobs/edit?job=" + hash + "&paid=1"); !strings.Contains(page.Body, "the payment is being confirmed") {
		t.Fatalf("return page: %s", page.Body)
	}
	// Nothing is due on a free plan, so its pay page has no form.
	p = &poster{t: t, app: newPagesApp(baseURL, hosted, pagesSecret)}
	freeHash := hashOf(t, free.EditURL)
	page, _ := p.open("/jobs/pay?job=" + freeHash)
	if !strings.Contains(page.Body, "No payment is due") || strings.Contains(page.Body, `id="pay"`) {
		t.Fatalf("pay page of a free job: %s", page.Body)
	}
	// Nor on a job paid since its pay page was shown.
	paidBody := jobBody("Paid Since Shown", 1780)
	paidBody["id_plan"] = 7
	paid := create(t, liveKey(1780, 2780), paidBody)
	paidHash := hashOf(t, *paid.PaymentURL)
	_, tokens := p.open("/jobs/pay?job=" + paidHash)
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET is_paid = true WHERE id = $1`, paid.JobID); err != nil {
		t.Fatal(err)
	}
	if r := p.post("/jobs/pay", url.Values{"_csrf": {tokens["/jobs/pay"]}, "job": {paidHash}}); r.Status != 409 || len(hosted.got) != 1 {
		t.Fatalf("pay a paid job: %d, %d checkouts", r.Status, len(hosted.got))
	}
}
