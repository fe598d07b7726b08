package tests

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// jobTitle reads a job's title from the store.
func jobTitle(t *testing.T, id int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(bgContext, `SELECT title FROM jobs WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A form's token is bound to its job and to the form: one taken from job A's
// page is refused on job B, and one of A's publish form on A's other forms;
// nothing changes. The token of the form itself is accepted.
func TestPosterFormTokenBoundToJobAndForm(t *testing.T) {
	t.Parallel()
	key := liveKey(1800, 2800) // a non-Pro space: drafts
	a := create(t, key, jobBody("Token Job A", 1800))
	b := create(t, key, jobBody("Token Job B", 1800))
	hashA, hashB := hashOf(t, a.EditURL), hashOf(t, b.EditURL)
	p := &poster{t: t, app: appPages()}
	_, tokensA := p.open("/jobs/edit?job=" + hashA)
	_, unpublishA := p.open("/jobs/unpublish?job=" + hashA)
	_, tokensB := p.open("/jobs/edit?job=" + hashB) // the same session has B's page open too
	if tokensA["/jobs/edit"] == "" || tokensA["/jobs/publish"] == "" || unpublishA["/jobs/unpublish"] == "" || tokensB["/jobs/edit"] == "" {
		t.Fatalf("tokens %v %v %v", tokensA, unpublishA, tokensB)
	}
	edit := func(token, hash string) url.Values {
		return url.Values{"_csrf": {token}, "job": {hash}, "title": {"Hijacked"}, "company": {"Acme Coworking"},
			"description": {"<p>Text</p>"}, "job_type": {"fulltime"}, "tags": {"a"}, "currency": {"EUR"}}
	}
	tests := []struct {
		name, target string
		form         url.Values
	}{
		{"editTokenOfAOnB", "/jobs/edit", edit(tokensA["/jobs/edit"], hashB)},
		{"publishTokenOfAOnB", "/jobs/publish", url.Values{"_csrf": {tokensA["/jobs/publish"]}, "job": {hashB}}},
		{"unpublishTokenOfAOnB", "/jobs/unpublish", url.Values{"_csrf": {unpublishA["/jobs/unpublish"]}, "job": {hashB}}},
		{"editTokenOnPublish", "/jobs/publish", url.Values{"_csrf": {tokensA["/jobs/edit"]}, "job": {hashA}}},
		{"publishTokenOnEdit", "/jobs/edit", edit(tokensA["/jobs/publish"], hashA)},
		{"publishTokenOnUnpublish", "/jobs/unpublish", url.Values{"_csrf": {tokensA["/jobs/publish"]}, "job": {hashA}}},
		{"unpublishTokenOnPublish", "/jobs/publish", url.Values{"_csrf": {unpublishA["/jobs/unpublish"]}, "job": {hashA}}},
		{"publishTokenOnPay", "/jobs/pay", url.Values{"_csrf": {tokensA["/jobs/publish"]}, "job": {hashA}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := p.post(tc.target, tc.form); r.Status != 403 || !strings.Contains(r.Body, "Reload the page") {
				t.Fatalf("%d %s", r.Status, heading(r.Body))
			}
		})
	}
	for _, j := range []createResult{a, b} {
		if s, title := jobStatus(t, j.JobID), jobTitle(t, j.JobID); s != "draft" || !strings.HasPrefix(title, "Token Job") {
			t.Fatalf("a refused form changed job %d: %s %q", j.JobID, s, title)
		}
	}
	// Each form's own token still works.
	if r := p.post("/jobs/edit", edit(tokensB["/jobs/edit"], hashB)); r.Status != 303 || jobTitle(t, b.JobID) != "Hijacked" {
		t.Fatalf("B's own edit form: %d %s", r.Status, heading(r.Body))
	}
	if r := p.post("/jobs/publish", url.Values{"_csrf": {tokensA["/jobs/publish"]}, "job": {hashA}}); r.Status != 303 || jobStatus(t, a.JobID) != "active" {
		t.Fatalf("A's own publish form: %d %s", r.Status, heading(r.Body))
	}
}

// A form sent from another origin is refused; one from the public base URL's
// origin, or without an Origin (not a browser), is accepted. The pages'
// no-referrer policy makes a browser send "null" for their own forms, which
// Sec-Fetch-Site tells apart from a foreign one.
func TestPosterFormsCheckOrigin(t *testing.T) {
	t.Parallel()
	cr := create(t, liveKey(1805, 2805), jobBody("Origin Guarded", 1805))
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	_, tokens := p.open("/jobs/edit?job=" + hash)
	publish := url.Values{"_csrf": {tokens["/jobs/publish"]}, "job": {hash}}
	for name, hdr := range map[string][]string{
		"foreign":           {"Origin", "https://evil.example"},
		"suffixOfOurs":      {"Origin", baseURL + ".evil.example"},
		"otherScheme":       {"Origin", strings.Replace(baseURL, "https://", "http://", 1)},
		"otherPort":         {"Origin", baseURL + ":8443"},
		"nullCrossSite":     {"Origin", "null", "Sec-Fetch-Site", "cross-site"},
		"nullWithoutFetch":  {"Origin", "null"},
		"foreignSameOrigin": {"Origin", "https://evil.example", "Sec-Fetch-Site", "same-origin"},
	} {
		t.Run(name, func(t *testing.T) {
			if r := p.post("/jobs/publish", publish, hdr...); r.Status != 403 {
				t.Fatalf("%d %s", r.Status, heading(r.Body))
			}
		})
	}
	if s := jobStatus(t, cr.JobID); s != "draft" {
		t.Fatalf("a refused form changed the job: %s", s)
	}
	if r := p.post("/jobs/publish", publish, "Origin", baseURL); r.Status != 303 || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("same origin: %d %s", r.Status, heading(r.Body))
	}
	_, tokens = p.open("/jobs/edit?job=" + hash)
	if r := p.post("/jobs/pause", url.Values{"_csrf": {tokens["/jobs/pause"]}, "job": {hash}}); r.Status != 303 || jobStatus(t, cr.JobID) != "paused" {
		t.Fatalf("no Origin: %d %s", r.Status, heading(r.Body))
	}
	_, tokens = p.open("/jobs/edit?job=" + hash)
	r := p.post("/jobs/resume", url.Values{"_csrf": {tokens["/jobs/resume"]}, "job": {hash}}, "Origin", "null", "Sec-Fetch-Site", "same-origin")
	if r.Status != 303 || jobStatus(t, cr.JobID) != "active" {
		t.Fatalf("null origin of our own page: %d %s", r.Status, heading(r.Body))
	}
}

// Emptying both salary fields on the edit page removes the salary: the store
// holds none (not 0), and the API shows the job as one created without one.
func TestEditPageClearsSalary(t *testing.T) {
	t.Parallel()
	key := liveKey(1810, 1810)
	body := jobBody("Salary Cleared", 1810)
	body["sal_min"], body["sal_max"] = 30000, 40000
	cr := create(t, key, body)
	none := create(t, key, jobBody("Never Had Salary", 1810))
	hash := hashOf(t, cr.EditURL)
	p := &poster{t: t, app: appPages()}
	_, tokens := p.open(pagePath(t, cr.EditURL))
	form := url.Values{"_csrf": {tokens["/jobs/edit"]}, "job": {hash}, "title": {"Salary Cleared"}, "company": {"Acme Coworking"},
		"description": {"<p>Text</p>"}, "job_type": {"fulltime"}, "tags": {"a"}, "currency": {"EUR"}, "sal_min": {""}, "sal_max": {" "}}
	if r := p.post("/jobs/edit", form); r.Status != 303 {
		t.Fatalf("save: %d %s", r.Status, heading(r.Body))
	}
	var lo, hi *int64
	if err := pool.QueryRow(bgContext, `SELECT sal_min, sal_max FROM jobs WHERE id = $1`, cr.JobID).Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if lo != nil || hi != nil {
		t.Fatalf("stored salary %v %v, want none", deref(lo), deref(hi))
	}
	api := func(id int64) map[string]any {
		r := do(t, appFlat, "GET", "/v2/jobs/"+itoa(id), "", &key)
		var d map[string]any
		r.data(t, &d)
		return d
	}
	cleared, without := api(cr.JobID), api(none.JobID)
	for _, f := range []string{"sal_min", "sal_max"} {
		if cleared[f] != without[f] {
			t.Errorf("%s is %#v, a job without a salary has %#v", f, cleared[f], without[f])
		}
	}
	// One bound kept, the other emptied: the emptied one is gone.
	_, tokens = p.open(pagePath(t, cr.EditURL))
	form.Set("_csrf", tokens["/jobs/edit"])
	form.Set("sal_min", "25000")
	if r := p.post("/jobs/edit", form); r.Status != 303 {
		t.Fatalf("save: %d %s", r.Status, heading(r.Body))
	}
	if err := pool.QueryRow(bgContext, `SELECT sal_min, sal_max FROM jobs WHERE id = $1`, cr.JobID).Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if lo == nil || *lo != 25000 || hi != nil {
		t.Fatalf("stored salary %v %v, want 25000 and none", deref(lo), deref(hi))
	}
}

func deref(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// Bidi embedding, override and isolate controls in a job's title, company
// or city would let the text around them read as something else: the pages
// show the text without them, in the body, the <title> and the JobPosting,
// and isolate it where it sits inside a sentence.
func TestPagesStripBidiControls(t *testing.T) {
	t.Parallel()
	key := liveKey(1815, 1815) // a Pro space: active at once
	cr := create(t, key, jobBody("Bidi Title", 1815))
	// Written to the store directly: the API may refuse control characters.
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET title = $2, company = $3, city_name = $4, tags = $5 WHERE id = $1`, cr.JobID,
		"Manager \u202egnp.exe\u202c of \u2066spaces\u2069", "Acme \u202dCoworking", "Li\u202bsbon\u202a", "events\u202e, ok"); err != nil {
		t.Fatal(err)
	}
	const bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
	public := pageDo(t, appPages(), http.MethodGet, "/jobs/"+cr.PageURL, nil)
	if public.Status != 200 {
		t.Fatalf("%d %s", public.Status, heading(public.Body))
	}
	for _, want := range []string{"<title>Manager gnp.exe of spaces at Acme Coworking · coworkjobs</title>", "<h1>Manager gnp.exe of spaces</h1>",
		`<bdi id="company">Acme Coworking</bdi>`, `<bdi id="location">Lisbon</bdi>`, "<li>events</li>"} {
		if !strings.Contains(public.Body, want) {
			t.Errorf("public page lacks %q", want)
		}
	}
	if ld := readLD(t, public.Body); ld.Title != "Manager gnp.exe of spaces" || ld.HiringOrganization.Name != "Acme Coworking" ||
		ld.JobLocation == nil || ld.JobLocation.Address.AddressLocality != "Lisbon" {
		t.Errorf("JobPosting %+v", ld)
	}
	p := &poster{t: t, app: appPages()}
	edit, _ := p.open(pagePath(t, cr.EditURL))
	pay, _ := p.open("/jobs/pay?job=" + hashOf(t, cr.EditURL))
	unpublish, _ := p.open(pagePath(t, cr.UnpublishURL))
	if !strings.Contains(pay.Body, "Pay for “<bdi>Manager gnp.exe of spaces</bdi>”") ||
		!strings.Contains(unpublish.Body, "Unpublish “<bdi>Manager gnp.exe of spaces</bdi>”?") {
		t.Errorf("a title inside a sentence is not isolated: %q, %q", heading(pay.Body), heading(unpublish.Body))
	}
	for name, page := range map[string]pageResp{"public": public, "edit": edit, "pay": pay, "unpublish": unpublish} {
		if i := strings.IndexAny(page.Body, bidi); i >= 0 {
			t.Errorf("the %s page carries a bidi control at %d: %q", name, i, page.Body[max(0, i-40):min(len(page.Body), i+40)])
		}
	}
}

func heading(body string) string {
	_, h, _ := strings.Cut(body, "<h1>")
	h, _, _ = strings.Cut(h, "</h1>")
	return h
}
