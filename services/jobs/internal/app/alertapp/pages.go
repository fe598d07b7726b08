package alertapp

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
)

// The pages behind an alert mail's links (/alerts/confirm, /alerts/manage,
// /alerts/unsubscribe): a GET only shows a page whose button POSTs, so a
// mail client's link scanner that fetches every link confirms or deletes
// nothing. The POSTs are the forms' and RFC 8058's one-click (which posts
// List-Unsubscribe=One-Click to the header's URL, this page's). No CSRF
// token: the link's token in the form is the capability, which a forging
// site does not know.

//go:embed templates
var pageFiles embed.FS

type pageView struct {
	Title, Notice, Message string
	Kind                   string // confirm, manage, unsubscribe, or "" (a message)
	Token                  string
	Search                 []pair
	Frequency              string
	Frequencies            []string
	Confirmed, Paused      bool
	Feeds                  *Feeds
	ManageURL              string
	CSS                    template.CSS
}

type pair struct{ Name, Value string }

type pageSet struct {
	h    handlers
	tmpl *template.Template
	css  template.CSS
	csp  string
	log  *slog.Logger
}

func newPageSet(h handlers, log *slog.Logger) *pageSet {
	css, err := pageFiles.ReadFile("templates/style.css")
	if err != nil {
		panic(err)
	}
	style := strings.TrimSpace(string(css))
	sum := sha256.Sum256([]byte(style))
	t := template.Must(template.ParseFS(pageFiles, "templates/page.html"))
	return &pageSet{h: h, tmpl: t, css: template.CSS(style), //nolint:gosec // G203: our own embedded style sheet
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'", log: log}
}

// pageRoutes mounts the pages; every answer under /alerts is HTML.
func pageRoutes(app *fiber.App, h handlers, log *slog.Logger) {
	p := newPageSet(h, log)
	g := app.Group("/alerts", p.headers, p.htmlErrors)
	g.Get("/confirm", p.confirmPage)
	g.Post("/confirm", p.confirm)
	g.Get("/manage", p.managePage)
	g.Post("/manage", p.update)
	g.Get("/unsubscribe", p.unsubscribePage)
	g.Post("/unsubscribe", p.unsubscribe)
}

// headers: the pages' links are capabilities; nothing keeps or leaks them.
func (p *pageSet) headers(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentSecurityPolicy, p.csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Robots-Tag", "noindex, nofollow")
	return c.Next()
}

// htmlErrors answers an error as a page, with the status of a web.Error
// (a 404 for a link of no alert, a 422 for a bad form) or a 500.
func (p *pageSet) htmlErrors(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	v := pageView{Title: "Something went wrong", Message: "Please try again in a moment."}
	status := http.StatusInternalServerError
	var we *web.Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &we):
		status, v.Title, v.Message = we.Status, "This link does not work", we.Message
		if d, ok := we.Details.([]string); ok && len(d) > 0 {
			v.Title, v.Message = "Please check the form", strings.Join(d, "; ")
		}
	case errors.As(err, &fe):
		status, v.Title, v.Message = fe.Code, http.StatusText(fe.Code), fe.Message
	default:
		p.log.ErrorContext(c.UserContext(), "alert page", "error", err, "request_id", web.RequestID(c))
	}
	return p.render(c, status, v)
}

func (p *pageSet) render(c *fiber.Ctx, status int, v pageView) error {
	v.CSS = p.css
	var buf bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&buf, "page.html", v); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// pageToken is the token of the link (query) or of the form (body).
func pageToken(c *fiber.Ctx) (string, error) {
	t := c.Query("token")
	if t == "" && c.Method() == fiber.MethodPost {
		t = c.FormValue("token")
	}
	switch {
	case t == "":
		return "", web.NotFound("This link has no token: open the link of the mail as it was sent.")
	case len(t) > MaxTokenLen:
		return "", web.NotFound("This link is not one of ours: open the link of the mail as it was sent.")
	}
	return strings.Clone(t), nil
}

func (p *pageSet) alert(c *fiber.Ctx, purpose string) (alertbus.Alert, string, error) {
	t, err := pageToken(c)
	if err != nil {
		return alertbus.Alert{}, "", err
	}
	a, err := p.h.bus.Resolve(c.UserContext(), purpose, t)
	if errors.Is(err, alertbus.ErrBadToken) {
		return a, "", web.NotFound("No alert matches this link; it may have been deleted, or expired unconfirmed.")
	}
	return a, t, err
}

func searchPairs(search string) []pair {
	q, _ := url.ParseQuery(search)
	var out []pair
	for _, k := range alertbus.SearchParams {
		if v := q.Get(k); v != "" {
			out = append(out, pair{k, v})
		}
	}
	return out
}

func (p *pageSet) confirmPage(c *fiber.Ctx) error {
	a, t, err := p.alert(c, alertbus.PurposeConfirm)
	if err != nil {
		return err
	}
	if a.ConfirmedAt != nil {
		return p.render(c, http.StatusOK, pageView{Title: "Your job alert is confirmed", Search: searchPairs(a.Search),
			Message: "It was confirmed already; nothing changed.", ManageURL: p.manageURL(a)})
	}
	return p.render(c, http.StatusOK, pageView{Title: "Confirm your job alert", Kind: "confirm", Token: t, Search: searchPairs(a.Search),
		Message: "Press the button to receive " + a.Frequency + " mails about new jobs matching this search."})
}

func (p *pageSet) confirm(c *fiber.Ctx) error {
	a, _, err := p.alert(c, alertbus.PurposeConfirm)
	if err != nil {
		return err
	}
	if _, err := p.h.bus.Confirm(c.UserContext(), a.ID); err != nil {
		return notFound(err)
	}
	return p.render(c, http.StatusOK, pageView{Title: "Your job alert is confirmed", Search: searchPairs(a.Search),
		Notice: "Confirmed: you will hear of each new job matching this search.", ManageURL: p.manageURL(a)})
}

func (p *pageSet) manageURL(a alertbus.Alert) string {
	return "/alerts/manage?token=" + url.QueryEscape(p.h.bus.Signer.Token(alertbus.PurposeManage, a))
}

// notices are what a manage form did, named in the redirect after it.
var notices = map[string]string{
	"frequency": "The frequency is saved.",
	"paused":    "The alert is paused: no mails until you resume it.",
	"resumed":   "The alert is active again.",
}

func (p *pageSet) managePage(c *fiber.Ctx) error {
	a, t, err := p.alert(c, alertbus.PurposeManage)
	if err != nil {
		return err
	}
	return p.render(c, http.StatusOK, pageView{Title: "Your job alert", Kind: "manage", Token: t, Search: searchPairs(a.Search),
		Frequency: a.Frequency, Frequencies: Frequencies, Confirmed: a.ConfirmedAt != nil, Paused: a.Paused, Feeds: p.h.feeds(a),
		Notice: notices[c.Query("done")]})
}

// update saves one manage form (frequency, or pause/resume) and redirects
// to the page (303: a reload does not post it again).
func (p *pageSet) update(c *fiber.Ctx) error {
	a, t, err := p.alert(c, alertbus.PurposeManage)
	if err != nil {
		return err
	}
	var freq *string
	var paused *bool
	done := ""
	if f := c.FormValue("frequency"); f != "" {
		if !slices.Contains(Frequencies, f) {
			return web.Validation("Validation failed", []string{"frequency must be one of " + strings.Join(Frequencies, ", ")})
		}
		s := strings.Clone(f)
		freq, done = &s, "frequency"
	}
	switch c.FormValue("paused") {
	case "":
	case "true":
		b := true
		paused, done = &b, "paused"
	case "false":
		b := false
		paused, done = &b, "resumed"
	default:
		return web.Validation("Validation failed", []string{"paused must be true or false"})
	}
	if done == "" {
		return web.Validation("Validation failed", []string{"choose a frequency, or pause or resume the alert"})
	}
	if _, err := p.h.bus.Update(c.UserContext(), a.ID, freq, paused); err != nil {
		return notFound(err)
	}
	return c.Redirect("/alerts/manage?token="+url.QueryEscape(t)+"&done="+done, http.StatusSeeOther)
}

func (p *pageSet) unsubscribePage(c *fiber.Ctx) error {
	a, t, err := p.alert(c, alertbus.PurposeManage)
	if err != nil {
		return err
	}
	return p.render(c, http.StatusOK, pageView{Title: "Delete your job alert?", Kind: "unsubscribe", Token: t, Search: searchPairs(a.Search),
		Message: "You will receive no more mails about this search; the alert and its address are deleted."})
}

// unsubscribe deletes the alert: the page's button, or RFC 8058's
// one-click POST (List-Unsubscribe=One-Click, token in the query).
func (p *pageSet) unsubscribe(c *fiber.Ctx) error {
	a, _, err := p.alert(c, alertbus.PurposeManage)
	if err != nil {
		return err
	}
	if err := p.h.bus.Delete(c.UserContext(), a.ID); err != nil {
		return err
	}
	return p.render(c, http.StatusOK, pageView{Title: "Your job alert is deleted", Search: searchPairs(a.Search),
		Notice: "Deleted, with its address: you will receive no more mails about this search."})
}
