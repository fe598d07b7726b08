package tests

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// startPagesBackend stands for the jobs service's pages: it checks the
// gateway's signed identity like the real service, and answers what it saw
// (cookie, query, form, identity kind) as HTML, with the cookie, redirects
// and statuses the pages use.
func startPagesBackend(t *testing.T) string {
	t.Helper()
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(webConfig(), logx.NewTo(io.Discard, "jobs", "error"), "jobs")
	html := func(c *fiber.Ctx, status int) error {
		c.Set(echoHeader, "jobs")
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Status(status).SendString("<p>kind=" + identity.From(c).Kind + " cookie=" + c.Get(fiber.HeaderCookie) +
			" query=" + string(c.Request().URI().QueryString()) + " form=" + c.FormValue("job") + "</p>")
	}
	g := srv.App.Group("/jobs", codec.Middleware())
	g.Get("/edit", func(c *fiber.Ctx) error {
		c.Cookie(&fiber.Cookie{Name: "jobs_csrf", Value: "tok123", Path: "/", HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode})
		c.Set(fiber.HeaderCacheControl, "no-store")
		return html(c, http.StatusOK)
	})
	g.Post("/publish", func(c *fiber.Ctx) error {
		return c.Redirect("/jobs/edit?job="+url.QueryEscape(c.FormValue("job"))+"&done=published", http.StatusSeeOther)
	})
	g.Post("/pay", func(c *fiber.Ctx) error { return c.Redirect("https://pay.example/session/1", http.StatusSeeOther) })
	g.Post("/unpublish", func(c *fiber.Ctx) error { return html(c, http.StatusOK) })
	g.Get("/:page", func(c *fiber.Ctx) error {
		switch c.Params("page") {
		case "old-title-1":
			return c.Redirect("/jobs/new-title-1", http.StatusMovedPermanently)
		case "gone-2":
			return html(c, http.StatusGone)
		}
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return html(c, http.StatusOK)
	})
	// An API route, to see that it still drops cookies.
	srv.App.Get("/v2/vine/jobs", codec.Middleware(), func(c *fiber.Ctx) error {
		c.Set(echoHeader, "jobs")
		return web.OK(c, 200, fiber.Map{"cookie": c.Get(fiber.HeaderCookie)})
	})
	return listen(t, srv)
}

// noRedirects relays redirects to the test instead of following them.
var noRedirects = &http.Client{Timeout: client.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type pageAnswer struct {
	status int
	header http.Header
	body   string
}

func pageReq(t *testing.T, method, target, form string, hdr ...string) pageAnswer {
	t.Helper()
	var rd io.Reader
	if form != "" {
		rd = strings.NewReader(form)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return pageAnswer{resp.StatusCode, resp.Header, string(b)}
}

// The job pages go through the gateway with no key, as public identities,
// with their cookies both ways, their query and form, and the backend's
// statuses and Location headers relayed as they are; HEAD works. They are
// not API: GET /v2 does not list them, and API routes still drop cookies.
func TestPagesProxiedPublicWithCookies(t *testing.T) {
	g := startGateway(t, gatewayOpts{backendURL: startPagesBackend(t)})

	r := pageReq(t, "GET", g.base+"/jobs/edit?job=abc123&paid=1", "", "Cookie", "jobs_csrf=old; other=1")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		r.body != "<p>kind=public cookie=jobs_csrf=old; other=1 query=job=abc123&paid=1 form=abc123</p>" {
		t.Fatalf("GET edit page: %d %v %q", r.status, r.header, r.body)
	}
	set := (&http.Response{Header: r.header}).Cookies()
	if len(set) != 1 || set[0].Name != "jobs_csrf" || set[0].Value != "tok123" || !set[0].HttpOnly || set[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("Set-Cookie relayed as %q", r.header.Values("Set-Cookie"))
	}
	if r.header.Get("Referrer-Policy") != "no-referrer" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", r.header)
	}

	head := pageReq(t, "HEAD", g.base+"/jobs/new-title-1", "")
	get := pageReq(t, "GET", g.base+"/jobs/new-title-1", "")
	if head.status != 200 || head.body != "" || get.status != 200 || head.header.Get("Content-Length") != strconv.Itoa(len(get.body)) ||
		get.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("HEAD %d %q %v; GET %d %v", head.status, head.body, head.header, get.status, get.header)
	}

	for _, tc := range []struct {
		method, path, form string
		status             int
		location           string
	}{
		{"GET", "/jobs/old-title-1", "", 301, "/jobs/new-title-1"},
		{"GET", "/jobs/gone-2", "", 410, ""},
		{"POST", "/jobs/publish", "job=abc123&_csrf=tok123", 303, "/jobs/edit?job=abc123&done=published"},
		{"POST", "/jobs/pay", "job=abc123&_csrf=tok123", 303, "https://pay.example/session/1"},
	} {
		r := pageReq(t, tc.method, g.base+tc.path, tc.form, "Cookie", "jobs_csrf=tok123")
		if r.status != tc.status || r.header.Get("Location") != tc.location {
			t.Fatalf("%s %s: %d %q, want %d %q", tc.method, tc.path, r.status, r.header.Get("Location"), tc.status, tc.location)
		}
	}
	r = pageReq(t, "POST", g.base+"/jobs/unpublish", "job=abc123&_csrf=tok123", "Cookie", "jobs_csrf=tok123")
	if r.status != 200 || !strings.Contains(r.body, "cookie=jobs_csrf=tok123 query= form=abc123") {
		t.Fatalf("POST unpublish: %d %q", r.status, r.body)
	}

	var api struct{ Cookie string }
	do(t, "GET", g.base+"/v2/vine/jobs", "", map[string]string{"Cookie": "jobs_csrf=tok123"}).data(t, &api)
	if api.Cookie != "" {
		t.Fatalf("an API route forwarded the cookie %q", api.Cookie)
	}
	var info struct{ Routes []struct{ Path string } }
	do(t, "GET", g.base+"/v2", "", nil).data(t, &info)
	for _, rt := range info.Routes {
		if strings.HasPrefix(rt.Path, "/jobs") {
			t.Fatalf("GET /v2 lists the page %s", rt.Path)
		}
	}
}

// Pages are limited per client IP: GETs on the public read budget (shared
// with the public feeds), form posts on the public spam guard; a refusal is
// an HTML page with Retry-After.
func TestPagesLimitedPerIP(t *testing.T) {
	g := startGateway(t, gatewayOpts{backendURL: startPagesBackend(t), publicRead: 3, publicLimit: 2})
	for i, p := range []string{"/jobs/edit?job=a", "/jobs/some-job-3", "/v2/vine/jobs"} {
		r := pageReq(t, "GET", g.base+p, "")
		if r.status != 200 || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) || !strings.Contains(r.header.Get("RateLimit-Policy"), `"public_read"`) {
			t.Fatalf("read %d (%s): %d remaining %q policy %q", i+1, p, r.status, r.header.Get("X-RateLimit-Remaining"), r.header.Get("RateLimit-Policy"))
		}
	}
	r := pageReq(t, "GET", g.base+"/jobs/some-job-3", "")
	if r.status != 429 || r.header.Get("Retry-After") == "" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(r.body, "Too many requests") {
		t.Fatalf("4th read: %d %v %q", r.status, r.header, r.body)
	}
	for i := range 2 {
		if r := pageReq(t, "POST", g.base+"/jobs/unpublish", "job=a"); r.status != 200 || !strings.Contains(r.header.Get("RateLimit-Policy"), `"public_ip"`) {
			t.Fatalf("post %d: %d %v", i+1, r.status, r.header)
		}
	}
	if r := pageReq(t, "POST", g.base+"/jobs/unpublish", "job=a"); r.status != 429 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("3rd post: %d %v %q", r.status, r.header, r.body)
	}
}

// A page whose backend is down is an HTML 503, not the API's envelope.
func TestPageBackendDownIsHTML(t *testing.T) {
	g := startGateway(t, gatewayOpts{backendURL: "http://127.0.0.1:1"})
	r := pageReq(t, "GET", g.base+"/jobs/some-job-3", "")
	if r.status != 503 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "jobs service is unavailable") {
		t.Fatalf("%d %v %q", r.status, r.header, r.body)
	}
	if !strings.Contains(g.logs.String(), `"msg":"request failed","service":"gateway","status":503,"method":"GET","route":"/jobs/:page"`) {
		t.Fatalf("the failure is not logged:\n%s", g.logs.String())
	}
}

// GET /v2 points feed readers and crawlers to the feeds and the sitemap.
func TestAPIRootListsFeeds(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	var info struct {
		SitemapURL string `json:"sitemap_url"`
		Feeds      []struct{ Title, Type, URL string }
	}
	do(t, "GET", g.base+"/v2", "", nil).data(t, &info)
	var types []string
	for _, f := range info.Feeds {
		if strings.HasSuffix(f.URL, "/v2/vine/jobs?format=rss") && f.Type == "application/rss+xml" {
			types = append(types, f.Type)
		}
		if !strings.HasPrefix(f.URL, "http") {
			t.Fatalf("feed url %q is not absolute", f.URL)
		}
	}
	if len(types) != 1 || len(info.Feeds) != 11 || !strings.HasSuffix(info.SitemapURL, "/sitemap.xml") {
		t.Fatalf("%+v", info)
	}
}

// GET /robots.txt is the gateway's own: the poster's pages are off limits,
// and the sitemap is named.
func TestRobots(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	r := pageReq(t, "GET", g.base+"/robots.txt", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(r.body, "Disallow: /jobs/edit\n") || !strings.Contains(r.body, "Sitemap: http://gateway.test/sitemap.xml\n") {
		t.Fatalf("%d %v %q", r.status, r.header, r.body)
	}
}
