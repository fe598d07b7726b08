// Package privacyapp answers the public erasure route (docs/privacy.md):
// GET /v2/privacy/erase?token= is a page with one button, so that a mail
// scanner prefetching the link erases nothing; its POST erases the address
// everywhere (here, and community through the outbox).
package privacyapp

import (
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/privacybus"
)

// Config wires the handlers.
type Config struct {
	Bus   *privacybus.Business
	Codec *identity.Codec
}

type handlers struct{ bus *privacybus.Business }

// Routes mounts GET and POST /v2/privacy/erase (public; the gateway limits
// them per IP).
func Routes(app *fiber.App, cfg Config) {
	h := handlers{bus: cfg.Bus}
	v2 := app.Group("/v2", cfg.Codec.Middleware())
	v2.Get("/privacy/erase", h.page)
	v2.Post("/privacy/erase", h.erase)
}

// Erased is the answer of the POST.
type Erased struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

const erasedMessage = "The address is erased: its job alerts and their matches here, and its newsletter subscription " +
	"(within a minute). Nothing more will be sent to it."

var page = template.Must(template.New("erase").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>{{.Title}} · coworkjobs</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}
button{font:inherit;padding:.5rem 1rem;background:#b00020;color:#fff;border:0;border-radius:4px;cursor:pointer}</style>
</head><body><h1>{{.Title}}</h1>
{{if .Token}}<p>Erase <strong>{{.Email}}</strong> from coworkjobs: every job alert of this address with its matches,
and its newsletter subscription. This cannot be undone; you can always subscribe again.</p>
<form method="post" action="/v2/privacy/erase"><input type="hidden" name="token" value="{{.Token}}">
<button type="submit">Erase this address everywhere</button></form>
{{else}}<p>{{.Message}}</p>{{end}}
</body></html>
`))

type view struct {
	Title, Email, Token, Message string
}

func render(c *fiber.Ctx, status int, v view) error {
	var b strings.Builder
	if err := page.Execute(&b, v); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer") // the token must not leave in a Referer
	return c.Status(status).SendString(b.String())
}

// wantsHTML: the page's own form (a browser) gets a page back; API clients the envelope.
func wantsHTML(c *fiber.Ctx) bool {
	return strings.Contains(c.Get(fiber.HeaderAccept), "text/html")
}

func tokenProblem(t string) []string {
	switch {
	case t == "":
		return []string{"token is required"}
	case len(t) > privacy.MaxTokenLen:
		return []string{"token must be at most 512 characters"}
	}
	return nil
}

const badLink = "This erasure link is not valid: it may have been altered or cut. Use the link of a mail as it came."

// GET /v2/privacy/erase?token=: the confirmation page (HTML). Its errors
// are pages for a browser, the envelope for any other client.
func (h handlers) page(c *fiber.Ctx) error {
	html := wantsHTML(c)
	t := c.Query("token")
	if p := tokenProblem(t); p != nil {
		if !html {
			return web.Validation("Validation failed", p)
		}
		return render(c, http.StatusUnprocessableEntity, view{Title: "Invalid link", Message: p[0]})
	}
	email, err := h.bus.Open(t)
	if err != nil {
		if !html {
			return web.NotFound(badLink)
		}
		return render(c, http.StatusNotFound, view{Title: "Invalid link", Message: badLink})
	}
	return render(c, http.StatusOK, view{Title: "Erase your address", Email: email, Token: t})
}

// POST /v2/privacy/erase: the token in the query, or in a form or JSON body.
func (h handlers) erase(c *fiber.Ctx) error {
	html := wantsHTML(c)
	t := strings.Clone(c.Query("token"))
	if t == "" && len(c.Body()) > 0 {
		body, err := web.DecodeJSONOrForm(c)
		if err != nil {
			return err
		}
		t = body.String("token")
		if err := body.Err(nil); err != nil {
			return err
		}
	}
	if p := tokenProblem(t); p != nil {
		if html {
			return render(c, http.StatusUnprocessableEntity, view{Title: "Invalid link", Message: p[0]})
		}
		return web.Validation("Validation failed", p)
	}
	_, err := h.bus.EraseToken(c.UserContext(), t)
	if errors.Is(err, privacybus.ErrBadToken) {
		if html {
			return render(c, http.StatusNotFound, view{Title: "Invalid link", Message: badLink})
		}
		return web.NotFound(badLink)
	}
	if err != nil {
		return err
	}
	if html {
		return render(c, http.StatusOK, view{Title: "Address erased", Message: erasedMessage})
	}
	return web.OK(c, http.StatusOK, Erased{Status: "erased", Message: erasedMessage})
}
