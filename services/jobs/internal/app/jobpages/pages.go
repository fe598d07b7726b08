package jobpages

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
)

// view is what a page template reads.
type view struct {
	Title     string
	CSS       template.CSS
	JSONLD    template.JS
	Canonical string
	Noindex   bool
	// Feeds are the <link rel="alternate"> of a public page.
	Feeds []feedLink

	// The poster's pages.
	csrf        string // the session's token (csrfSession)
	tokens      *signedTokens
	Hash        string
	Notice      string   // what was done
	Problem     string   // why an action was refused
	PaymentLink string   // with Problem: where paying unblocks it
	Problems    []string // the edit form's
	Form        editForm
	JobTypes    []option
	Currencies  []option
	Workplaces  []option
	Periods     []option
	Invoice     bool
	// Distribution is where the job is announced and listed (the edit page).
	Distribution *indexbus.Distribution

	Job jobView

	// Error pages.
	Heading, Message string
}

type option struct{ Value, Label string }

type feedLink struct{ Type, Title, URL string }

// feedLinks are the jobs feeds a public page points feed readers to: every
// job, and the jobs in the page's city.
func (p *pages) feedLinks(d jobbus.Detail) []feedLink {
	base := p.bus.BaseURL() + "/v2/vine/jobs?format="
	city := "&city=" + url.QueryEscape(d.CitySlug)
	return []feedLink{
		{"application/rss+xml", "coworkjobs: latest jobs (RSS)", base + "rss"},
		{"application/atom+xml", "coworkjobs: latest jobs (Atom)", base + "atom"},
		{"application/feed+json", "coworkjobs: latest jobs (JSON Feed)", base + "json"},
		{"application/rss+xml", "coworkjobs: jobs in " + d.CityName + " (RSS)", base + "rss" + city},
	}
}

// Token is the CSRF field of the page's form posting to /jobs/{form}.
func (v view) Token(form string) string {
	return v.tokens.forForm(v.csrf, form, v.Hash)
}

// isBidiControl reports the embedding, override and isolate controls. In a
// title or a name they make the text read differently from what it is (an
// override reverses what follows it, past the field's end too).
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// stripBidi is the templates' nobidi: s without bidi controls, for every
// single-line text of a job's poster shown on the pages.
func stripBidi(s string) string {
	if strings.IndexFunc(s, isBidiControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isBidiControl(r) {
			return -1
		}
		return r
	}, s)
}

// jobView is one job as the pages show it.
type jobView struct {
	Title, Company, Location, JobType, Salary string
	Tags                                      []string
	Description                               template.HTML
	ApplyURL                                  string
	Posted, Until                             string
	Listed                                    bool // Posted and Until are a listing period
	Status                                    string
	PlanName, Price, Amount                   string
	IsPaid                                    bool
	PublicPath                                string // set while the job is public
	CanPublish, CanUnpublish, PaymentDue      bool
	CanPause, CanResume, CanRelist            bool
}

// editForm is the edit form's values, as sent or as stored.
type editForm struct {
	Title, Company, Description, JobType, Tags, ApplyURL, SalMin, SalMax, Currency string
	IsRemote                                                                       bool
	// WorkplaceType and SalaryPeriod: "" when the form sent none (the
	// is_remote box decides, the period stays).
	WorkplaceType, SalaryPeriod string
}

var workplaceLabels = map[string]string{jobbus.WorkplaceOnSite: "On site", jobbus.WorkplaceHybrid: "Hybrid", jobbus.WorkplaceRemote: "Remote"}

// periodWords are how a salary's period reads after the amount ("a year").
var periodWords = map[string]string{"hour": "an hour", "day": "a day", "week": "a week", "month": "a month", "year": "a year"}

var jobTypeLabels = map[string]string{"fulltime": "Full-time", "parttime": "Part-time", "freelance": "Freelance", "internship": "Internship"}

func (p *pages) jobView(d jobbus.Detail) jobView {
	v := jobView{
		Title: d.Title, Company: d.Company, Location: d.CityName, JobType: jobTypeLabels[d.JobType],
		Tags: jobbus.NormalizeTags(d.Tags),
		// Sanitised when written (jobbus.SanitizeDescription, on create and edit).
		Description: template.HTML(d.Description), //nolint:gosec // G203: sanitised HTML, see above
		Posted:      day(d.DateAdded), Until: day(d.ExpirationDate), Listed: d.Status != jobbus.StatusDraft,
		Status: d.Status, PlanName: d.Plan.Name, Price: "free", Amount: money(d.Plan.Price, d.Plan.Currency), IsPaid: d.IsPaid,
		CanPublish:   d.Status == jobbus.StatusDraft,
		CanPause:     d.Status == jobbus.StatusActive,
		CanResume:    d.Status == jobbus.StatusPaused,
		CanRelist:    d.Status == jobbus.StatusExpired,
		CanUnpublish: d.Status == jobbus.StatusDraft || d.Status == jobbus.StatusActive || d.Status == jobbus.StatusPaused,
		PaymentDue:   p.bus.PaymentDue(d),
	}
	switch d.WorkplaceType {
	case jobbus.WorkplaceRemote:
		v.Location = "Remote"
	case jobbus.WorkplaceHybrid:
		v.Location = d.CityName + " (hybrid)"
	}
	if d.Plan.Price > 0 {
		v.Price = v.Amount
	}
	if lo, hi, ok := salaryRange(d); ok {
		v.Salary = salaryText(lo, hi, d.Currency, d.SalaryPeriod)
	}
	switch {
	case d.ApplyURL != nil && *d.ApplyURL != "":
		v.ApplyURL = *d.ApplyURL
	case d.ExternalURL != "":
		v.ApplyURL = d.ExternalURL
	}
	if p.bus.Visible(d) {
		v.PublicPath = "/jobs/" + jobbus.PageURL(d.Slug, d.ID)
	}
	return v
}

func day(t time.Time) string { return t.UTC().Format("2 January 2006") }

// money writes whole units of a currency: "49.00 EUR".
func money(units int, currency string) string {
	return grouped(int64(units)) + ".00 " + currency
}

func salaryText(lo, hi *int64, currency, period string) string {
	per, ok := periodWords[period]
	if !ok {
		per = periodWords[jobbus.DefaultSalaryPeriod]
	}
	switch {
	case lo != nil && hi != nil && *lo == *hi:
		return grouped(*lo) + " " + currency + " " + per
	case lo != nil && hi != nil:
		return grouped(*lo) + "–" + grouped(*hi) + " " + currency + " " + per
	case lo != nil:
		return "from " + grouped(*lo) + " " + currency + " " + per
	}
	return "up to " + grouped(*hi) + " " + currency + " " + per
}

// grouped writes n with thousands separators: 45,000.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// render writes a page with its status.
func (p *pages) render(c *fiber.Ctx, status int, name string, v view) error {
	v.CSS = p.css
	var buf bytes.Buffer
	if err := p.tmpl[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		return err // a template bug: logged by htmlErrors, answered as a 500 page
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// pageError is an error answered with the error page.
type pageError struct {
	status           int
	heading, message string
}

func (e *pageError) Error() string { return e.heading }

var (
	errNoJob = &pageError{http.StatusNotFound, "Job not found",
		"There is no job at this address. If you followed a link from an e-mail, check that it was copied whole."}
	errGone = &pageError{http.StatusGone, "This job is no longer available",
		"The position has been filled or the listing has ended."}
)

// headings of the error pages by status, for errors raised outside the
// page handlers (the CSRF check, an unknown path, a timeout).
var headings = map[int]string{
	http.StatusBadRequest:            "Bad request",
	http.StatusForbidden:             "Form refused",
	http.StatusNotFound:              "Page not found",
	http.StatusMethodNotAllowed:      "Method not allowed",
	http.StatusRequestEntityTooLarge: "Too much data",
	http.StatusUnsupportedMediaType:  "Unsupported request",
}

// htmlErrors answers every error under /jobs with an HTML page of the right
// status. Only 5xx are logged: route template and error, never the path or
// query (the hash).
func (p *pages) htmlErrors(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	var pe *pageError
	if !errors.As(err, &pe) {
		e := web.Classify(err)
		pe = &pageError{status: e.Status, heading: headings[e.Status], message: e.Message}
		if e.Status >= 500 {
			p.log.ErrorContext(c.UserContext(), "page failed", "status", e.Status, "method", c.Method(),
				"route", web.RouteTemplate(c), "request_id", web.RequestID(c), "error", err.Error())
			pe.heading, pe.message = "Something went wrong", "The page could not be prepared. Try again in a moment."
		}
		if pe.heading == "" {
			pe.heading = http.StatusText(e.Status)
		}
	}
	if len(c.Response().Header.Peek(fiber.HeaderContentSecurityPolicy)) == 0 {
		p.baseHeaders(c, p.csp)
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	c.Response().ResetBody()
	if rerr := p.render(c, pe.status, "error", view{Title: pe.heading, Heading: pe.heading, Message: pe.message, Noindex: true}); rerr != nil {
		c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		return c.Status(pe.status).SendString(pe.heading)
	}
	return nil
}

// lookupErr turns a look-up's error into the page's.
func lookupErr(err error) error {
	if errors.Is(err, jobbus.ErrNotFound) {
		return errNoJob
	}
	return err
}

// ---- the public job page ----

// job answers GET /jobs/{slug}-{id}.
func (p *pages) job(c *fiber.Ctx) error {
	slug, id, ok := parsePage(c.Params("page"))
	if !ok {
		return errNoJob
	}
	d, err := p.bus.PublicByID(c.UserContext(), id)
	if err != nil {
		return lookupErr(err)
	}
	switch {
	case p.bus.Visible(d):
	case d.Status == jobbus.StatusDraft:
		return errNoJob // never public: its existence is not told
	default:
		// Paused, expired, closed, or active past its date: it was public,
		// and search engines must drop it now (410, noindex, no JSON-LD).
		c.Set("X-Robots-Tag", "noindex")
		return errGone
	}
	canonical := jobbus.PageURL(d.Slug, d.ID)
	if slug != d.Slug {
		// An old or truncated slug: one address per job.
		return c.Redirect("/jobs/"+canonical, http.StatusMovedPermanently)
	}
	public := p.bus.JobURL(canonical)
	ld, err := jsonLD(newJobPosting(d, public))
	if err != nil {
		return err
	}
	v := p.jobView(d)
	if p.cfg.Stats != nil {
		// Counted off the request's path (a buffer); the Apply link counts
		// its click under the channel the page was reached by.
		ch := p.cfg.Stats.View(c, d.ID)
		if v.ApplyURL != "" {
			v.ApplyURL = p.cfg.Stats.GoURL(d.ID, ch)
		}
	}
	return p.render(c, http.StatusOK, "job", view{Title: d.Title + " at " + d.Company, Canonical: public, JSONLD: ld, Job: v,
		Feeds: p.feedLinks(d)})
}

// parsePage splits "{slug}-{id}"; a bare id has an empty slug (and is
// redirected to the canonical address).
func parsePage(page string) (slug string, id int64, ok bool) {
	num := page
	if i := strings.LastIndexByte(page, '-'); i >= 0 {
		slug, num = page[:i], page[i+1:]
	}
	if num == "" || len(num) > 18 || strings.TrimLeft(num, "0123456789") != "" {
		return "", 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	return slug, id, err == nil && id > 0
}

// ---- the poster's pages ----

// byHash finds the job of the request's capability: ?job= on a GET, the
// form's job field on a POST.
func (p *pages) byHash(c *fiber.Ctx) (jobbus.Detail, string, error) {
	hash := c.Query("job")
	if c.Method() == fiber.MethodPost {
		hash = c.FormValue("job")
	}
	d, err := p.bus.QueryByHash(c.UserContext(), hash)
	if err != nil {
		return jobbus.Detail{}, "", lookupErr(err)
	}
	return d, hash, nil
}

// posterView is the common part of the poster's pages.
func (p *pages) posterView(c *fiber.Ctx, d jobbus.Detail, hash string) view {
	return view{Title: d.Title, Noindex: true, csrf: csrfSession(c), tokens: p.tokens, Hash: hash, Job: p.jobView(d)}
}

// notices are the messages of ?done= after a redirect; only these are shown.
var notices = map[string]string{
	jobbus.ActionPublished: "The job is published.",
	jobbus.ActionPaused:    "The job is paused: it is not listed, and its days are kept for when you resume it.",
	jobbus.ActionResumed:   "The job is listed again; its end date moved by the time it was paused.",
	jobbus.ActionRelisted:  "The job is listed again for a new period.",
	"already_active":       "The job is already published.",
	"already_paused":       "The job is already paused.",
	"saved":                "Your changes are saved.",
}

// edit answers GET /jobs/edit?job={hash}.
func (p *pages) edit(c *fiber.Ctx) error {
	d, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	v := p.editView(c, d, hash, formOf(d))
	v.Notice = notices[c.Query("done")]
	if c.Query("paid") == "1" {
		v.Notice = "Thank you: the payment is being confirmed. The job is published as soon as the payment provider confirms it."
	}
	return p.render(c, http.StatusOK, "edit", v)
}

func (p *pages) editView(c *fiber.Ctx, d jobbus.Detail, hash string, f editForm) view {
	v := p.posterView(c, d, hash)
	v.Form = f
	if dist, err := indexbus.Record(c.UserContext(), p.cfg.Announcements, d.ID, d.Status, d.Plan.ID, p.cfg.AggregatorPlans); err != nil {
		p.log.Warn("distribution record", "job", d.ID, "error", err) // the page goes on without it
	} else {
		v.Distribution = &dist
	}
	for _, t := range jobbus.JobTypes {
		v.JobTypes = append(v.JobTypes, option{t, jobTypeLabels[t]})
	}
	for _, cur := range jobbus.Currencies {
		v.Currencies = append(v.Currencies, option{cur, cur})
	}
	for _, w := range jobbus.WorkplaceTypes {
		v.Workplaces = append(v.Workplaces, option{w, workplaceLabels[w]})
	}
	for _, per := range jobbus.SalaryPeriods {
		v.Periods = append(v.Periods, option{per, periodWords[per]})
	}
	return v
}

func formOf(d jobbus.Detail) editForm {
	f := editForm{Title: d.Title, Company: d.Company, Description: d.Description, JobType: d.JobType, Tags: d.Tags,
		IsRemote: d.IsRemote, Currency: d.Currency, WorkplaceType: d.WorkplaceType, SalaryPeriod: d.SalaryPeriod}
	if d.ApplyURL != nil {
		f.ApplyURL = *d.ApplyURL
	}
	lo, hi, _ := salaryRange(d)
	if lo != nil {
		f.SalMin = strconv.FormatInt(*lo, 10)
	}
	if hi != nil {
		f.SalMax = strconv.FormatInt(*hi, 10)
	}
	return f
}

// saveEdit answers POST /jobs/edit: saved → back to the page; refused →
// the form again with every problem (422).
func (p *pages) saveEdit(c *fiber.Ctx) error {
	d, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	f := editForm{Title: c.FormValue("title"), Company: c.FormValue("company"), Description: c.FormValue("description"),
		JobType: c.FormValue("job_type"), Tags: c.FormValue("tags"), ApplyURL: c.FormValue("apply_url"),
		SalMin: strings.TrimSpace(c.FormValue("sal_min")), SalMax: strings.TrimSpace(c.FormValue("sal_max")),
		Currency: c.FormValue("currency"), IsRemote: c.FormValue("is_remote") == "1",
		WorkplaceType: c.FormValue("workplace_type"), SalaryPeriod: c.FormValue("salary_period")}
	in, problems := editInput(f)
	if len(problems) == 0 {
		_, err = p.bus.Edit(c.UserContext(), hash, in)
		var ve *validate.Error
		switch {
		case errors.As(err, &ve):
			problems = ve.Problems
		case err != nil:
			return lookupErr(err)
		}
	}
	if len(problems) > 0 {
		v := p.editView(c, d, hash, f)
		v.Problems = problems
		return p.render(c, http.StatusUnprocessableEntity, "edit", v)
	}
	return c.Redirect(editPath(hash, "done", "saved"), http.StatusSeeOther)
}

// editInput reads the form into an edit. An empty salary field is no bound;
// both empty is no salary at all.
func editInput(f editForm) (jobbus.EditInput, []string) {
	in := jobbus.EditInput{Title: &f.Title, Company: &f.Company, Description: &f.Description, JobType: &f.JobType,
		Tags: &f.Tags, ApplyURL: &f.ApplyURL, Currency: &f.Currency}
	if f.WorkplaceType != "" {
		in.WorkplaceType = &f.WorkplaceType
	} else {
		remote := int64(0)
		if f.IsRemote {
			remote = 1
		}
		in.IsRemote = &remote
	}
	if f.SalaryPeriod != "" {
		in.SalaryPeriod = &f.SalaryPeriod
	}
	var problems []string
	num := func(name, s string) *int64 {
		if s == "" {
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			problems = append(problems, name+" must be a whole number")
			return nil
		}
		return &n
	}
	in.SalMin, in.SalMax = num("sal_min", f.SalMin), num("sal_max", f.SalMax)
	in.ClearSalary = f.SalMin == "" && f.SalMax == ""
	return in, problems
}

func editPath(hash string, kv ...string) string {
	q := url.Values{"job": {hash}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return "/jobs/edit?" + q.Encode()
}

// publish answers POST /jobs/publish.
func (p *pages) transition(ev jobbus.Event) fiber.Handler {
	return func(c *fiber.Ctx) error {
		d, hash, err := p.byHash(c)
		if err != nil {
			return err
		}
		res, err := p.bus.TransitionByHash(c.UserContext(), hash, ev)
		var ce *jobbus.ConflictError
		switch {
		case errors.As(err, &ce):
			v := p.editView(c, d, hash, formOf(d))
			v.Problem = strings.ReplaceAll(ce.Message, "at payment_url", "on the payment page")
			if ce.PaymentURL != nil {
				v.PaymentLink = *ce.PaymentURL
			}
			return p.render(c, http.StatusConflict, "edit", v)
		case err != nil:
			return lookupErr(err)
		}
		return c.Redirect(editPath(hash, "done", res.Action), http.StatusSeeOther)
	}
}

// confirmUnpublish answers GET /jobs/unpublish?job={hash}.
func (p *pages) confirmUnpublish(c *fiber.Ctx) error {
	d, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	return p.render(c, http.StatusOK, "unpublish", p.posterView(c, d, hash))
}

// unpublish answers POST /jobs/unpublish.
func (p *pages) unpublish(c *fiber.Ctx) error {
	_, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	res, err := p.bus.TransitionByHash(c.UserContext(), hash, jobbus.EventUnpublish)
	if err != nil {
		var ce *jobbus.ConflictError
		if errors.As(err, &ce) {
			return &pageError{http.StatusConflict, "Not unpublished", ce.Message}
		}
		return lookupErr(err)
	}
	v := p.posterView(c, res.Job, hash)
	v.Job.Status = res.Status
	v.Notice = "The job is unpublished: it is no longer listed."
	if res.Action == jobbus.ActionAlreadyUnpublished {
		v.Notice = "The job was already unpublished."
	}
	return p.render(c, http.StatusOK, "unpublished", v)
}

// pay answers GET /jobs/pay?job={hash}.
func (p *pages) pay(c *fiber.Ctx) error {
	d, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	return p.render(c, http.StatusOK, "pay", p.posterView(c, d, hash))
}

// startPayment answers POST /jobs/pay: off to the provider's page, or the
// invoice text when the provider has no hand-off (or there is no provider).
func (p *pages) startPayment(c *fiber.Ctx) error {
	d, hash, err := p.byHash(c)
	if err != nil {
		return err
	}
	if !p.bus.PaymentDue(d) {
		v := p.posterView(c, d, hash)
		return p.render(c, http.StatusConflict, "pay", v)
	}
	redirect := ""
	if p.cfg.Payments != nil {
		base := p.bus.BaseURL()
		redirect, err = p.cfg.Payments.Start(c.UserContext(), payment.Checkout{
			JobID: d.ID, JobTitle: d.Title, PlanID: d.Plan.ID, PlanName: d.Plan.Name,
			Amount: int64(d.Plan.Price) * 100, Currency: strings.ToUpper(d.Plan.Currency), Email: d.InvEmail,
			SuccessURL: base + editPath(hash, "paid", "1"),
			CancelURL:  base + "/jobs/pay?" + url.Values{"job": {hash}}.Encode(),
		})
		if err != nil {
			// Logged without the checkout, whose URLs carry the hash (and
			// without the hash, should the provider quote them).
			p.log.ErrorContext(c.UserContext(), "start payment", "provider", p.cfg.Payments.Name(), "job_id", d.ID,
				"request_id", web.RequestID(c), "error", strings.ReplaceAll(err.Error(), hash, "[edit hash]"))
			return &pageError{http.StatusBadGateway, "Payment not started",
				"The payment provider could not be reached. Nothing was charged; try again in a moment."}
		}
	}
	if redirect != "" {
		return c.Redirect(redirect, http.StatusSeeOther)
	}
	v := p.posterView(c, d, hash)
	v.Invoice = true
	return p.render(c, http.StatusOK, "pay", v)
}
