package tests

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobpages"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
)

// pagesSecret signs the pages' CSRF tokens in the tests.
var pagesSecret = []byte("pages-secret-pages-secret-pages-secret-01")

// newPagesApp is the jobs service with its pages, at base (the public base
// URL), starting payments with provider.
func newPagesApp(base string, provider payment.Provider, secret []byte) *fiber.App {
	return newPagesAppLog(base, provider, secret, testLog)
}

func newPagesAppLog(base string, provider payment.Provider, secret []byte, log *slog.Logger) *fiber.App {
	bus := newBus(base, dirURL)
	srv := web.New(webtest.Config(), log, "jobs")
	jobapp.Routes(srv.App, jobapp.Config{Log: log, Bus: bus, Codec: codec})
	jobpages.Routes(srv.App, jobpages.Config{Log: log, Bus: bus, Payments: provider, Secret: secret})
	srv.Fallback()
	return srv.App
}

var appPages = sync.OnceValue(func() *fiber.App { return newPagesApp(baseURL, nil, pagesSecret) })

// pageResp is one page's answer.
type pageResp struct {
	Status int
	Header http.Header
	Body   string
}

func (r pageResp) cookie(name string) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// csrfCookie is the pages' CSRF cookie under https (baseURL is https).
const csrfCookie = "__Host-jobs_csrf"

func pageDo(t *testing.T, app *fiber.App, method, target string, form url.Values, headers ...string) pageResp {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, target, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := app.Test(req, 30_000)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := pageResp{Status: res.StatusCode, Header: res.Header, Body: string(b)}
	// Every answer under /jobs is a page, errors included.
	if ct := r.Header.Get("Content-Type"); method != http.MethodHead && (r.Status < 300 || r.Status >= 400) && !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("%s %s: %d with Content-Type %q: %s", method, target, r.Status, ct, r.Body)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("%s %s: security headers missing: %v", method, target, r.Header)
	}
	return r
}

// poster is a browser session on the poster's pages: it keeps the CSRF cookie.
type poster struct {
	t      *testing.T
	app    *fiber.App
	cookie string
}

// csrfInput is a form of the pages with its CSRF token.
var csrfInput = regexp.MustCompile(`<form method="post" action="([^"]+)"[^>]*>\s*<input type="hidden" name="_csrf" value="([^"]+)"`)

// formTokens are the CSRF tokens of a page's forms by their action.
type formTokens map[string]string

// open GETs a poster's page and returns it with its forms' CSRF tokens.
func (p *poster) open(target string) (pageResp, formTokens) {
	p.t.Helper()
	var hdr []string
	if p.cookie != "" {
		hdr = []string{"Cookie", csrfCookie + "=" + p.cookie}
	}
	r := pageDo(p.t, p.app, http.MethodGet, target, nil, hdr...)
	if c := r.cookie(csrfCookie); c != nil {
		if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
			p.t.Fatalf("CSRF cookie attributes: %+v", c)
		}
		p.cookie = c.Value
	}
	tokens := formTokens{}
	for _, m := range csrfInput.FindAllStringSubmatch(r.Body, -1) {
		tokens[m[1]] = m[2]
	}
	return r, tokens
}

// post sends a form as the browser would from the pages: the cookie, the
// gateway's forwarded scheme, and no Referer (Referrer-Policy: no-referrer).
func (p *poster) post(target string, form url.Values, headers ...string) pageResp {
	p.t.Helper()
	return pageDo(p.t, p.app, http.MethodPost, target, form, append([]string{"Cookie", csrfCookie + "=" + p.cookie, "X-Forwarded-Proto", "https"}, headers...)...)
}

func hashOf(t *testing.T, editURL string) string {
	t.Helper()
	u, err := url.Parse(editURL)
	if err != nil || u.Query().Get("job") == "" {
		t.Fatalf("edit_url %q", editURL)
	}
	return u.Query().Get("job")
}

func pagePath(t *testing.T, full string) string {
	t.Helper()
	u, err := url.Parse(full)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}

// jobStatus reads a job's status from the store.
func jobStatus(t *testing.T, id int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(bgContext, `SELECT status FROM jobs WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// jobLD is the page's JobPosting as the tests read it.
type jobLD struct {
	Context            string `json:"@context"`
	Type               string `json:"@type"`
	Title              string `json:"title"`
	Description        string `json:"description"`
	DatePosted         string `json:"datePosted"`
	ValidThrough       string `json:"validThrough"`
	EmploymentType     string `json:"employmentType"`
	HiringOrganization struct {
		Type string `json:"@type"`
		Name string `json:"name"`
	} `json:"hiringOrganization"`
	JobLocation *struct {
		Type    string `json:"@type"`
		Address struct {
			Type            string  `json:"@type"`
			AddressLocality string  `json:"addressLocality"`
			AddressCountry  *string `json:"addressCountry"`
		} `json:"address"`
	} `json:"jobLocation"`
	JobLocationType               string `json:"jobLocationType"`
	ApplicantLocationRequirements *struct {
		Type string `json:"@type"`
		Name string `json:"name"`
	} `json:"applicantLocationRequirements"`
	BaseSalary *struct {
		Type     string `json:"@type"`
		Currency string `json:"currency"`
		Value    struct {
			Type     string `json:"@type"`
			MinValue *int64 `json:"minValue"`
			MaxValue *int64 `json:"maxValue"`
			UnitText string `json:"unitText"`
		} `json:"value"`
	} `json:"baseSalary"`
	Identifier struct {
		Type  string `json:"@type"`
		Value string `json:"value"`
	} `json:"identifier"`
	URL string `json:"url"`
}

var ldScript = regexp.MustCompile(`(?s)<script type="application/ld\+json">(.*?)</script>`)

func readLD(t *testing.T, body string) jobLD {
	t.Helper()
	m := ldScript.FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		t.Fatalf("want one JSON-LD script, found %d", len(m))
	}
	var ld jobLD
	if err := json.Unmarshal([]byte(m[0][1]), &ld); err != nil {
		t.Fatalf("JSON-LD does not parse: %v\n%s", err, m[0][1])
	}
	return ld
}

// checkLD checks what Google for Jobs requires of every posting, and the
// location and salary of this one.
func checkLD(t *testing.T, ld jobLD, cr createResult, body map[string]any) {
	t.Helper()
	posted, err1 := time.Parse(time.RFC3339, ld.DatePosted)
	until, err2 := time.Parse(time.RFC3339, ld.ValidThrough)
	switch {
	case ld.Context != "https://schema.org/" || ld.Type != "JobPosting":
		t.Errorf("type %q %q", ld.Context, ld.Type)
	case ld.Title != body["title"] || ld.HiringOrganization.Name != body["company"] || ld.HiringOrganization.Type != "Organization":
		t.Errorf("title/organization: %+v", ld)
	case !strings.Contains(ld.Description, "<strong>"):
		t.Errorf("description %q", ld.Description)
	case err1 != nil || err2 != nil || !until.After(posted) || time.Since(posted) > time.Hour:
		t.Errorf("dates %q %q", ld.DatePosted, ld.ValidThrough)
	case ld.Identifier.Value != itoa(cr.JobID) || ld.URL != *cr.ViewURL:
		t.Errorf("identifier %+v url %q, want %d %q", ld.Identifier, ld.URL, cr.JobID, *cr.ViewURL)
	}
	wantType := map[string]string{"fulltime": "FULL_TIME", "parttime": "PART_TIME", "freelance": "CONTRACTOR", "internship": "INTERN"}[body["job_type"].(string)]
	if ld.EmploymentType != wantType {
		t.Errorf("employmentType %q, want %q", ld.EmploymentType, wantType)
	}
	if body["is_remote"] == 1 {
		// the fixture's generated cities lie in Portugal (main_test.go)
		if ld.JobLocationType != "TELECOMMUTE" || ld.ApplicantLocationRequirements == nil || ld.ApplicantLocationRequirements.Type != "Country" ||
			ld.ApplicantLocationRequirements.Name != "PT" || ld.JobLocation != nil {
			t.Errorf("remote job's location: %+v", ld)
		}
	} else if ld.JobLocation == nil || ld.JobLocation.Type != "Place" || ld.JobLocation.Address.AddressLocality != cr.City.Name ||
		ld.JobLocation.Address.AddressCountry == nil || *ld.JobLocation.Address.AddressCountry != "PT" || ld.JobLocationType != "" {
		t.Errorf("on-site job's location: %+v", ld.JobLocation)
	}
	if body["sal_min"] == nil {
		if ld.BaseSalary != nil {
			t.Errorf("baseSalary without a salary: %+v", ld.BaseSalary)
		}
		return
	}
	s := ld.BaseSalary
	if s == nil || s.Type != "MonetaryAmount" || s.Currency != body["currency"] || s.Value.Type != "QuantitativeValue" || s.Value.UnitText != "YEAR" ||
		s.Value.MinValue == nil || *s.Value.MinValue != body["sal_min"] || s.Value.MaxValue == nil || *s.Value.MaxValue != body["sal_max"] {
		t.Errorf("baseSalary %+v", s)
	}
}

// The public page of an active job: its facts, its description as HTML, its
// apply link, and a JobPosting Google for Jobs accepts, for on-site and
// remote jobs with and without a salary.
func TestJobPageShowsJobWithJSONLD(t *testing.T) {
	t.Parallel()
	key := liveKey(1700, 1700) // a Pro space: published at once
	tests := []struct {
		name string
		edit func(map[string]any)
	}{
		{"onSiteWithSalary", func(b map[string]any) {
			b["sal_min"], b["sal_max"], b["currency"] = int64(45000), int64(60000), "EUR"
			b["apply_url"] = "https://acme.example/apply?x=1&y=2"
		}},
		{"onSiteWithoutSalary", func(b map[string]any) { b["job_type"] = "internship" }},
		{"remoteWithSalary", func(b map[string]any) {
			b["is_remote"], b["job_type"] = 1, "freelance"
			b["sal_min"], b["sal_max"], b["currency"] = int64(500), int64(700), "GBP"
		}},
		{"remoteWithoutSalary", func(b map[string]any) { b["is_remote"], b["job_type"] = 1, "parttime" }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := jobBody("Page "+tc.name+" </script><!--", 1700+int64(i))
			body["description"] = "<p>Run the <strong>community</strong> & </script> events.</p>"
			tc.edit(body)
			cr := create(t, key, body)
			if cr.Status != "active" || cr.ViewURL == nil {
				t.Fatalf("fixture: %+v", cr)
			}
			r := pageDo(t, appPages(), http.MethodGet, pagePath(t, *cr.ViewURL), nil)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			for _, want := range []string{"Acme Coworking", "Run the <strong>community</strong> &amp;", "community", "events"} {
				if !strings.Contains(r.Body, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if strings.Count(r.Body, "</script>") != 1 || strings.Contains(r.Body, "<!--") {
				t.Errorf("a title or description closed the JSON-LD script or opened a comment:\n%s", r.Body)
			}
			wantLoc := cr.City.Name
			if body["is_remote"] == 1 {
				wantLoc = "Remote"
			}
			if !strings.Contains(r.Body, `<bdi id="location">`+wantLoc+`</bdi>`) {
				t.Errorf("location %q not shown", wantLoc)
			}
			if body["sal_min"] != nil && !strings.Contains(r.Body, `<span id="salary">`) {
				t.Error("salary not shown")
			}
			if body["sal_min"] == nil && strings.Contains(r.Body, `id="salary"`) {
				t.Error("a salary shown for a job without one")
			}
			if body["apply_url"] != nil && !strings.Contains(r.Body, `href="https://acme.example/apply?x=1&amp;y=2"`) {
				t.Error("apply link not shown")
			}
			if r.Header.Get("Cache-Control") != "no-cache" || r.cookie(csrfCookie) != nil {
				t.Errorf("public page headers: %v", r.Header)
			}
			checkLD(t, readLD(t, r.Body), cr, body)
		})
	}
}

// Unknown and draft jobs are 404; paused, expired, closed and past-date
// jobs (once public) are 410 with noindex and no JSON-LD; a wrong slug is a
// 301 to the canonical address. The poster's edit page of a gone job still
// works. An active job's page points feed readers to the feeds.
func TestJobPageStatuses(t *testing.T) {
	t.Parallel()
	pro, space := liveKey(1710, 1710), liveKey(1711, 2710)
	active := create(t, pro, jobBody("Status Active", 1710))
	draft := create(t, space, jobBody("Status Draft", 1710))
	paused := create(t, pro, jobBody("Status Paused", 1710))
	expired := create(t, pro, jobBody("Status Expired", 1710))
	closed := create(t, pro, jobBody("Status Closed", 1710))
	pastDate := create(t, pro, jobBody("Status Past Date", 1710))
	for _, step := range []struct {
		event string
		id    int64
	}{{"pause", paused.JobID}, {"unpublish", expired.JobID}, {"close", closed.JobID}} {
		if r, _, _ := transition(t, pro, step.event, step.id); r.Status != 200 {
			t.Fatalf("%s: %d %s", step.event, r.Status, r.Body)
		}
	}
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET expiration_date = now() - interval '1 minute' WHERE id = $1`, pastDate.JobID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		status   int
		location string
		text     string
	}{
		{"active200", "/jobs/" + active.PageURL, 200, "", "Status Active"},
		{"unknown404", "/jobs/status-active-999999999", 404, "", "Job not found"},
		{"malformed404", "/jobs/status-active", 404, "", "Job not found"},
		{"zeroID404", "/jobs/x-0", 404, "", "Job not found"},
		{"hugeID404", "/jobs/x-99999999999999999999", 404, "", "Job not found"},
		{"draft404", "/jobs/" + draft.PageURL, 404, "", "Job not found"},
		{"paused410", "/jobs/" + paused.PageURL, 410, "", "no longer available"},
		{"expired410", "/jobs/" + expired.PageURL, 410, "", "no longer available"},
		{"closed410", "/jobs/" + closed.PageURL, 410, "", "no longer available"},
		{"pastDate410", "/jobs/" + pastDate.PageURL, 410, "", "no longer available"},
		{"wrongSlug301", "/jobs/old-title-" + itoa(active.JobID), 301, "/jobs/" + active.PageURL, ""},
		{"bareID301", "/jobs/" + itoa(active.JobID), 301, "/jobs/" + active.PageURL, ""},
		{"draftWrongSlugStays404", "/jobs/x-" + itoa(draft.JobID), 404, "", "Job not found"},
		{"unknownPath404", "/jobs/a/b", 404, "", "Page not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := pageDo(t, appPages(), http.MethodGet, tc.path, nil)
			if r.Status != tc.status || r.Header.Get("Location") != tc.location || !strings.Contains(r.Body, tc.text) {
				t.Fatalf("want %d %q %q, got %d %q\n%s", tc.status, tc.location, tc.text, r.Status, r.Header.Get("Location"), r.Body)
			}
			if tc.status >= 400 && strings.Contains(r.Body, "application/ld+json") {
				t.Error("an error page carries a JobPosting")
			}
			if tc.status == 410 && (!strings.Contains(r.Body, `<meta name="robots" content="noindex`) || r.Header.Get("X-Robots-Tag") != "noindex") {
				t.Errorf("a gone job's page is indexable: %v\n%s", r.Header, r.Body)
			}
			if tc.status == 200 {
				for _, want := range []string{
					`<link rel="alternate" type="application/rss+xml" title="coworkjobs: latest jobs (RSS)" href="` + baseURL + `/v2/vine/jobs?format=rss">`,
					`<link rel="alternate" type="application/atom+xml"`, `<link rel="alternate" type="application/feed+json"`,
					`href="` + baseURL + `/v2/vine/jobs?format=rss&amp;city=city-1710"`,
				} {
					// html/template writes + as &#43; in attributes: the same value.
					if !strings.Contains(strings.ReplaceAll(r.Body, "&#43;", "+"), want) {
						t.Errorf("page lacks %s\n%s", want, r.Body)
					}
				}
			}
		})
	}
	t.Run("goneJobsEditPage200", func(t *testing.T) {
		for _, cr := range []createResult{paused, closed} {
			if r := pageDo(t, appPages(), http.MethodGet, "/jobs/edit?job="+cr.HashIdentifier, nil); r.Status != 200 {
				t.Fatalf("edit page of a gone job: %d\n%s", r.Status, r.Body)
			}
		}
	})
	t.Run("head200WithoutBody", func(t *testing.T) {
		r := pageDo(t, appPages(), http.MethodHead, "/jobs/"+active.PageURL, nil)
		if r.Status != 200 || r.Body != "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("%d %q %v", r.Status, r.Body, r.Header)
		}
	})
	t.Run("methods", func(t *testing.T) {
		r := pageDo(t, appPages(), http.MethodPost, "/jobs/unpublish", nil)
		if r.Status != 403 { // the form check comes first
			t.Fatalf("%d", r.Status)
		}
		r = pageDo(t, appPages(), http.MethodPut, "/jobs/edit", nil)
		if r.Status != 405 || r.Header.Get("Allow") == "" {
			t.Fatalf("%d %v", r.Status, r.Header)
		}
	})
}

// A wrong, malformed or missing hash is a 404 on every poster's page; the
// capability pages are never cached, indexed or named in a Referer.
func TestPosterPagesWrongHash404(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1720, 2720), jobBody("Wrong Hash", 1720))
	right := hashOf(t, cr.EditURL)
	wrong := strings.Repeat("0", 32)
	if wrong == right {
		t.Fatal("unlucky")
	}
	for _, page := range []string{"/jobs/edit", "/jobs/unpublish", "/jobs/pay"} {
		for name, q := range map[string]string{"wrong": "?job=" + wrong, "upper": "?job=" + strings.ToUpper(right),
			"short": "?job=" + right[:31], "long": "?job=" + right + "0", "missing": "", "twice": "?job=" + wrong + "&job=" + right} {
			t.Run(strings.TrimPrefix(page, "/jobs/")+"_"+name, func(t *testing.T) {
				r := pageDo(t, appPages(), http.MethodGet, page+q, nil)
				if r.Status != 404 || !strings.Contains(r.Body, "Job not found") || strings.Contains(r.Body, right) {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				if r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("Cache-Control") != "no-store" {
					t.Fatalf("headers %v", r.Header)
				}
			})
		}
		r := pageDo(t, appPages(), http.MethodGet, page+"?job="+right, nil)
		if r.Status != 200 || r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("Cache-Control") != "no-store" ||
			!strings.Contains(r.Header.Get("X-Robots-Tag"), "noindex") {
			t.Fatalf("%s with the right hash: %d %v", page, r.Status, r.Header)
		}
	}
	// A form of this job's pages sent with another hash changes nothing:
	// its token is bound to the hash of its page.
	p := &poster{t: t, app: appPages()}
	_, tokens := p.open("/jobs/edit?job=" + right)
	_, unpublish := p.open("/jobs/unpublish?job=" + right)
	tokens["/jobs/unpublish"] = unpublish["/jobs/unpublish"]
	for _, target := range []string{"/jobs/publish", "/jobs/unpublish", "/jobs/edit"} {
		r := p.post(target, url.Values{"_csrf": {tokens[target]}, "job": {wrong}, "title": {"Hijacked"}})
		if tokens[target] == "" || r.Status != 403 {
			t.Fatalf("POST %s with a wrong hash: %d %s", target, r.Status, r.Body)
		}
	}
	if s := jobStatus(t, cr.JobID); s != "draft" {
		t.Fatalf("status %s", s)
	}
}

// Every form needs the token of its page, the same in the cookie and the
// form, signed by the service: anything else is a 403 page and no change.
func TestPosterFormsNeedCSRFToken(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1730, 2730), jobBody("CSRF Guarded", 1730))
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	_, tokens := p.open("/jobs/edit?job=" + hash)
	token := tokens["/jobs/publish"]
	if token == "" || p.cookie == "" || !strings.HasPrefix(token, p.cookie) {
		t.Fatalf("token %q cookie %q", token, p.cookie)
	}
	other := &poster{t: t, app: appPages()}
	_, otherTokens := other.open("/jobs/edit?job=" + hash)
	otherToken := otherTokens["/jobs/publish"]
	// Signed by another secret: what a forger could make.
	forger := &poster{t: t, app: newPagesApp(baseURL, nil, []byte("another-secret-another-secret-another-1"))}
	_, forgedTokens := forger.open("/jobs/edit?job=" + hash)
	forged := forgedTokens["/jobs/publish"]
	tamper := []byte(token)
	tamper[3] ^= 1

	tests := []struct {
		name          string
		cookie, field string
	}{
		{"noTokenNoCookie", "", ""},
		{"cookieWithoutField", p.cookie, ""},
		{"fieldWithoutCookie", "", token},
		{"fieldOfAnotherSession", p.cookie, otherToken},
		{"forgedPair", forger.cookie, forged},
		{"tamperedPair", string(tamper[:len(p.cookie)]), string(tamper)},
		{"garbagePair", "x.y", "x.y"},
	}
	for _, target := range []string{"/jobs/publish", "/jobs/unpublish", "/jobs/edit", "/jobs/pay"} {
		for _, tc := range tests {
			t.Run(strings.TrimPrefix(target, "/jobs/")+"_"+tc.name, func(t *testing.T) {
				form := url.Values{"job": {hash}, "title": {"Changed"}}
				if tc.field != "" {
					form.Set("_csrf", tc.field)
				}
				var hdr []string
				if tc.cookie != "" {
					hdr = []string{"Cookie", csrfCookie + "=" + tc.cookie}
				}
				r := pageDo(t, appPages(), http.MethodPost, target, form, hdr...)
				if r.Status != 403 || !strings.Contains(r.Body, "Reload the page") {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
			})
		}
	}
	var title string
	if err := pool.QueryRow(bgContext, `SELECT title FROM jobs WHERE id = $1`, cr.JobID).Scan(&title); err != nil {
		t.Fatal(err)
	}
	if s := jobStatus(t, cr.JobID); s != "draft" || title != "CSRF Guarded" {
		t.Fatalf("a refused form changed the job: %s %q", s, title)
	}
	// The signed token is accepted by any replica with the same secret.
	replica := &poster{t: t, app: newPagesApp(baseURL, nil, pagesSecret), cookie: p.cookie}
	if r := replica.post("/jobs/publish", url.Values{"_csrf": {token}, "job": {hash}}); r.Status != 303 || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("another replica refused the form: %d %s", r.Status, r.Body)
	}
}
