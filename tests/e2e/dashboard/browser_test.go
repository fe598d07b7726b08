package dashboard

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/browsertest"

	"github.com/chromedp/chromedp"
)

// An owner in a real browser: asks for a link, signs in from the mail's
// link, creates a key and sees it once, the key works against the API, the
// owner revokes it and the API refuses it. The pages log nothing (a script
// or style the CSP refused would be a console message).
func TestDashboardInChromium(t *testing.T) {
	ctx := browsertest.New(t)
	email := addAdmin(t, 1, "owner")
	base := sys.URL["gateway"]

	var mu sync.Mutex
	var console []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String()+" at "+m.URL)
			mu.Unlock()
		}
	}()

	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/dashboard"),
		chromedp.WaitVisible(chromedp.ID("email")),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.Submit(chromedp.ID("email")),
		chromedp.WaitVisible(`//h1[text()="Check your mail"]`),
	); err != nil {
		t.Fatalf("ask for a link: %v", err)
	}
	link := mailedLinks(t, email, 1)[0]
	if err := chromedp.Do(ctx,
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.ID("sign-in")),
		chromedp.Click(chromedp.ID("sign-in")),
		chromedp.WaitVisible(`//h1[text()="Your spaces"]`),
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/spaces/1"]`)),
		chromedp.WaitVisible(chromedp.ID("create-key")),
		chromedp.SendKeys(chromedp.ID("key-name"), "Browser key"),
		chromedp.Click(chromedp.CSS(`input[name="scopes"][value="jobs:read"]`)),
		chromedp.Click(chromedp.ID("create-key")),
		chromedp.WaitVisible(chromedp.ID("new-key")),
	); err != nil {
		t.Fatalf("sign in and create a key: %v", err)
	}
	created, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("new-key")))
	if err != nil || !strings.HasPrefix(created, "svc_live_") {
		t.Fatalf("the page shows %q (%v)", created, err)
	}
	// The copy button runs under the CSP (no inline script).
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("copy-key")),
		chromedp.WaitVisible(`//span[@id="copied" and text()="Copied"]`)); err != nil {
		t.Errorf("copy button: %v", err)
	}
	if s, _ := apiCall(t, "GET", "/v2/jobs", created, ""); s != 200 {
		t.Fatalf("the new key against the API: %d", s)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/dashboard/spaces/1"),
		chromedp.WaitVisible(chromedp.ID("create-key")),
	); err != nil {
		t.Fatal(err)
	}
	shownAgain, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.body.innerHTML.includes(%q)`, created)))
	if err != nil || shownAgain {
		t.Errorf("the space page shows the key again: %v %v", shownAgain, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(`//tr[td[text()="Browser key"]]//button[text()="Revoke"]`),
		chromedp.WaitVisible(`//p[@role="status" and contains(text(), "revoked")]`),
	); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if s, _ := apiCall(t, "GET", "/v2/jobs", created, ""); s != 401 {
		t.Errorf("the revoked key against the API: %d", s)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range console {
		if !strings.Contains(m, "favicon") {
			t.Errorf("console: %s", m)
		}
	}
}
