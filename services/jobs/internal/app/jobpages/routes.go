// Package jobpages renders the HTML pages behind a job's links
// (docs/job-lifecycle.md): the public job page with its schema.org
// JobPosting, and the poster's pages, authorised by the job's edit hash
// alone: edit and publish, unpublish, pay. The gateway serves them publicly.
package jobpages

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"log/slog"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment"
)

// Config wires the pages.
type Config struct {
	Log *slog.Logger
	Bus *jobbus.Business
	// Payments starts a paid plan's payment; nil: the operator invoices it.
	Payments payment.Provider
	// Secret is the service's shared secret (INTERNAL_IDENTITY_SECRET, at
	// least 32 bytes); the forms' CSRF tokens are signed with a key derived
	// from it, so every replica accepts the forms of every other.
	Secret []byte
	// Announcements and AggregatorPlans make the distribution record the
	// poster's page shows (nil: no notices in it).
	Announcements   indexbus.Announcements
	AggregatorPlans []int
	// Stats counts the public page's views and leads its Apply link
	// through the counted redirect (nil: neither).
	Stats Stats
}

// Stats is what the public page needs of the job statistics (statsapp.Counter).
type Stats interface {
	// View counts a view of the job's page and returns its channel.
	View(c *fiber.Ctx, jobID int64) string
	// GoURL is the job's apply link through GET /go/{job_ref} for channel.
	GoURL(jobID int64, channel string) string
}

//go:embed templates
var files embed.FS

// pageNames are the templates besides the layout.
var pageNames = []string{"job", "edit", "unpublish", "unpublished", "pay", "error"}

type pages struct {
	cfg    Config
	bus    *jobbus.Business
	log    *slog.Logger
	tmpl   map[string]*template.Template
	tokens *signedTokens
	css    template.CSS
	csp    string
	payCSP string
}

// Routes mounts the pages under /jobs. Every answer under /jobs is an HTML
// page, errors included.
func Routes(app *fiber.App, cfg Config) {
	if len(cfg.Secret) < 32 {
		panic("jobpages: Config.Secret must be at least 32 bytes")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	origin, ok := originOf(cfg.Bus.BaseURL())
	if !ok {
		panic("jobpages: the public base URL is not an http(s) URL")
	}
	p := newPages(cfg)
	secure := strings.HasPrefix(origin, "https://")
	page := newCSRF(p.tokens, secure, "")

	g := app.Group("/jobs", p.htmlErrors)
	// The poster's pages: the hash in their query is a capability. A form
	// posts to /jobs/{form}, and its token is good for that form alone.
	get := func(path string, h fiber.Handler) { g.Get(path, p.capabilityHeaders, page, h) }
	post := func(form string, h fiber.Handler) {
		g.Post("/"+form, p.capabilityHeaders, forwardedSchemeOff, sameOrigin(origin), newCSRF(p.tokens, secure, form), h)
	}
	get("/edit", p.edit)
	post("edit", p.saveEdit)
	// The poster's transitions; unpublish has a confirmation page of its own.
	for _, ev := range []jobbus.Event{jobbus.EventPublish, jobbus.EventPause, jobbus.EventResume, jobbus.EventRelist} {
		post(string(ev), p.transition(ev))
	}
	get("/unpublish", p.confirmUnpublish)
	post("unpublish", p.unpublish)
	get("/pay", p.pay)
	post("pay", p.startPayment)
	// Registered last: /jobs/edit and the others are not job pages.
	g.Get("/:page", p.publicHeaders, p.job)
}

func newPages(cfg Config) *pages {
	css, err := files.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	style := strings.TrimSpace(string(css))
	// The one inline style element is allowed by its hash: no other style
	// (an attribute slipped into a description, say) applies.
	sum := sha256.Sum256([]byte(style))
	styleSrc := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	csp := func(formAction string) string {
		return "default-src 'none'; style-src " + styleSrc + "; img-src 'self'; form-action " + formAction +
			"; frame-ancestors 'none'; base-uri 'none'"
	}
	p := &pages{cfg: cfg, bus: cfg.Bus, log: cfg.Log, tmpl: map[string]*template.Template{}, tokens: newSignedTokens(cfg.Secret),
		css: template.CSS(style), //nolint:gosec // G203: our own embedded style sheet
		csp: csp("'self'"),
		// The payment form's answer is a redirect to the provider's hosted
		// page, and form-action also governs where a submission redirects.
		payCSP: csp("'self' https:"),
	}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(template.FuncMap{"nobidi": stripBidi}).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			panic(fmt.Sprintf("jobpages: template %s: %v", name, err))
		}
		p.tmpl[name] = t
	}
	return p
}

// baseHeaders are every page's.
func (p *pages) baseHeaders(c *fiber.Ctx, csp string) {
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
}

// capabilityHeaders: the poster's pages carry the edit hash in their URL;
// it must not leave in a Referer, be kept in a cache, or be indexed.
func (p *pages) capabilityHeaders(c *fiber.Ctx) error {
	csp := p.csp
	if c.Path() == "/jobs/pay" {
		csp = p.payCSP
	}
	p.baseHeaders(c, csp)
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Robots-Tag", "noindex, nofollow")
	return c.Next()
}

// publicHeaders: a job page may be cached but must be revalidated, so an
// unpublished job stops showing at once.
func (p *pages) publicHeaders(c *fiber.Ctx) error {
	p.baseHeaders(c, p.csp)
	c.Set(fiber.HeaderReferrerPolicy, "strict-origin-when-cross-origin")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Next()
}
