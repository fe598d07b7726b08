package tests

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/browsertest"

	"github.com/chromedp/chromedp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
)

// serveReach serves the reach routes on a loopback port behind a proxy that
// signs the public identity, as the gateway does; it returns the proxy's
// address and the paths it was asked for.
func serveReach(t *testing.T) (string, func() []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := reachOn(newBus(baseURL, dirURL), reachapp.Config{})
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })
	target, _ := url.Parse("http://" + ln.Addr().String())
	var mu sync.Mutex
	var asked []string
	rp := httputil.NewSingleHostReverseProxy(target)
	front := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		h, err := codec.Sign(identity.Identity{Kind: identity.KindPublic}, time.Minute)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		r.Header.Set(identity.Header, h)
		rp.ServeHTTP(w, r)
	})}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = front.Serve(fl) }()
	t.Cleanup(func() { _ = front.Close() })
	return "http://" + fl.Addr().String(), func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(asked) }
}

// The embed in a real browser, on a page of another origin with a strict
// CSP: it shows the space's active jobs, takes the host's theme through CSS
// variables, sets no cookie and asks for nothing but itself.
func TestEmbedInChromium(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t)
	key := liveKey(1795, 1795) // space pro-1795
	var ids []int64
	for _, title := range []string{"Embed Host", "Embed Barista", "Embed Paused"} {
		b := jobBody(title, 1795)
		b["job_type"] = "parttime"
		ids = append(ids, create(t, key, b).JobID)
	}
	if r, _, _ := transition(t, key, "pause", ids[2]); r.Status != 200 {
		t.Fatal(r.Status)
	}
	jobsOrigin, asked := serveReach(t)

	page := `<!doctype html><html><head><meta charset="utf-8"><title>A space's site</title>
<style nonce="n0nce">.coworkjobs-embed{--cwj-link:rgb(200, 10, 20);--cwj-radius:9px}</style></head>
<body><h1>Our jobs</h1>
<script src="` + jobsOrigin + `/embed/jobs.js?space=pro-1795" async></script>
</body></html>`
	var hostAsked []string
	var hostMu sync.Mutex
	host := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostMu.Lock()
		hostAsked = append(hostAsked, r.URL.Path)
		hostMu.Unlock()
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src "+jobsOrigin+"; style-src 'nonce-n0nce'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = host.Serve(hl) }()
	t.Cleanup(func() { _ = host.Close() })
	hostURL := "http://" + hl.Addr().String() + "/"

	if err := chromedp.Do(ctx, chromedp.Navigate(hostURL), chromedp.WaitReady(".coworkjobs-embed")); err != nil {
		t.Fatal(err)
	}
	var titles []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		titles, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelector('.coworkjobs-embed').shadowRoot.querySelectorAll('li a')).map(a => a.textContent)`))
		if err == nil && len(titles) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(titles, []string{"Embed Barista", "Embed Host"}) {
		t.Fatalf("the embed shows %q, want the space's two active jobs, newest first", titles)
	}
	info, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`(() => {
		const root = document.querySelector('.coworkjobs-embed').shadowRoot;
		const a = root.querySelector('li a');
		return {
			href: a.href, meta: root.querySelector('li .meta').textContent,
			color: getComputedStyle(a).color, radius: getComputedStyle(root.querySelector('.cwj')).borderTopLeftRadius,
			cookie: document.cookie,
			resources: performance.getEntriesByType('resource').map(e => e.name).join(' '),
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info["href"], baseURL+"/jobs/embed-barista-") || info["meta"] != "Part-time · City 1795" {
		t.Fatalf("job link or line: %v", info)
	}
	if info["color"] != "rgb(200, 10, 20)" || info["radius"] != "9px" {
		t.Fatalf("the host's theme did not apply: %v", info)
	}
	if info["cookie"] != "" || info["resources"] != jobsOrigin+"/embed/jobs.js?space=pro-1795" {
		t.Fatalf("cookies %q, requests %q", info["cookie"], info["resources"])
	}
	if got := asked(); !slices.Equal(got, []string{"/embed/jobs.js"}) {
		t.Fatalf("the jobs origin was asked for %v", got)
	}

	// What the browser was answered: a script for any origin, no cookie.
	res, err := http.Get(jobsOrigin + "/embed/jobs.js?space=pro-1795")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" || res.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" ||
		res.Header.Get("Access-Control-Allow-Origin") != "*" || res.Header.Get("Set-Cookie") != "" || res.Header.Get("ETag") == "" {
		t.Fatalf("headers %v", res.Header)
	}
}
