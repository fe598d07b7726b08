package tests

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/browsertest"

	"github.com/chromedp/chromedp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobpages"
)

// serveJobs runs the jobs service with its pages on a loopback port until
// the test ends; its public base URL is that address.
func serveJobs(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	bus := newBus(base, dirURL)
	cfg := webtest.Config()
	cfg.HTTPAddr = ln.Addr().String()
	srv := web.New(cfg, testLog, "jobs")
	jobapp.Routes(srv.App, jobapp.Config{Log: testLog, Bus: bus, Codec: codec})
	jobpages.Routes(srv.App, jobpages.Config{Log: testLog, Bus: bus, Secret: pagesSecret})
	srv.Fallback()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return base
}

// A poster's whole way through the pages in a real browser: publish a draft
// through its edit link, see the public page with its JobPosting, unpublish
// through its link, and the public page is gone (410).
func TestPagesInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t)
	base := serveJobs(t)

	// A draft of a non-Pro space, created through the API.
	body := jobBody("Browser Community Manager", 1790)
	body["sal_min"], body["sal_max"] = 42000, 52000
	id := liveKey(1790, 2790)
	signed, err := codec.Sign(id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/jobs", strings.NewReader(jsonBody(t, body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(identity.Header, signed)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var env struct{ Data createResult }
	err = json.NewDecoder(res.Body).Decode(&env)
	res.Body.Close()
	cr := env.Data
	if err != nil || res.StatusCode != 201 || cr.Status != "draft" || !strings.HasPrefix(cr.EditURL, base+"/jobs/edit?job=") {
		t.Fatalf("create: %d %v %+v", res.StatusCode, err, cr)
	}

	// Every message the pages log (a style or script the CSP refused would be one).
	var mu sync.Mutex
	var console []string
	consoleCtx, stopConsole := context.WithCancel(ctx)
	collected := make(chan struct{})
	messages := chromedp.Console(consoleCtx)
	go func() {
		defer close(collected)
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String()+" at "+m.URL)
			mu.Unlock()
		}
	}()

	// Publish through the edit link.
	if err := chromedp.Do(ctx, chromedp.Navigate(cr.EditURL), chromedp.WaitVisible(chromedp.ID("publish"))); err != nil {
		t.Fatal(err)
	}
	if status := text(t, ctx, chromedp.ID("status")); status != "draft" {
		t.Fatalf("edit page shows status %q", status)
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("publish")))
	if err != nil || resp.Status != 200 || !strings.Contains(resp.URL, "done=published") {
		t.Fatalf("Publish: %+v %v", resp, err)
	}
	// The inline style applies only if its hash in the CSP is right.
	maxWidth, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('main')).maxWidth`))
	if err != nil || maxWidth == "none" {
		t.Fatalf("the page's style did not apply: max-width %q %v", maxWidth, err)
	}
	if status, notice := text(t, ctx, chromedp.ID("status")), text(t, ctx, chromedp.CSS(".notice")); status != "active" || !strings.Contains(notice, "published") {
		t.Fatalf("after Publish: status %q, notice %q", status, notice)
	}
	if s := jobStatus(t, cr.JobID); s != "active" {
		t.Fatalf("stored status %s", s)
	}

	// The public page, and its JobPosting as the browser parsed the DOM.
	public := base + "/jobs/" + cr.PageURL
	resp, err = chromedp.Run(ctx, chromedp.NavigateResponse(public))
	if err != nil || resp.Status != 200 {
		t.Fatalf("public page: %+v %v", resp, err)
	}
	if h1 := text(t, ctx, chromedp.CSS("h1")); h1 != "Browser Community Manager" {
		t.Fatalf("h1 %q", h1)
	}
	ldText, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('script[type="application/ld+json"]').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	var ld jobLD
	if err := json.Unmarshal([]byte(ldText), &ld); err != nil {
		t.Fatalf("JSON-LD in the DOM: %v\n%s", err, ldText)
	}
	cr.ViewURL = &public
	body["sal_min"], body["sal_max"], body["currency"] = int64(42000), int64(52000), "EUR"
	checkLD(t, ld, cr, body)

	// Unpublish through its link.
	if err := chromedp.Do(ctx, chromedp.Navigate(cr.UnpublishURL), chromedp.WaitVisible(chromedp.ID("unpublish"))); err != nil {
		t.Fatal(err)
	}
	resp, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("unpublish")))
	if err != nil || resp.Status != 200 {
		t.Fatalf("Unpublish: %+v %v", resp, err)
	}
	if status := text(t, ctx, chromedp.ID("status")); status != "expired" || jobStatus(t, cr.JobID) != "expired" {
		t.Fatalf("after Unpublish: page %q, stored %q", status, jobStatus(t, cr.JobID))
	}
	resp, err = chromedp.Run(ctx, chromedp.NavigateResponse(public))
	if err != nil || resp.Status != 410 {
		t.Fatalf("public page after unpublish: %+v %v", resp, err)
	}
	if h1 := text(t, ctx, chromedp.CSS("h1")); !strings.Contains(h1, "no longer available") {
		t.Fatalf("410 page: %q", h1)
	}

	stopConsole()
	<-collected
	mu.Lock()
	defer mu.Unlock()
	for _, m := range console {
		// The 410 itself is logged as a failed load, and Chromium asks for
		// /favicon.ico, a 404 page here.
		if !strings.HasSuffix(m, base+"/favicon.ico") && !strings.HasSuffix(m, public) {
			t.Errorf("the page logged %q", m)
		}
	}
}

func text[S chromedp.Selectable](t *testing.T, ctx context.Context, sel S) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %v: %v", sel, err)
	}
	return s
}
