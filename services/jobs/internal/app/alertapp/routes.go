// Package alertapp answers the job alert routes (issue 36): save a search
// (double opt-in), confirm, manage, unsubscribe (RFC 8058 one-click).
package alertapp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Config wires the handlers.
type Config struct {
	Bus   *alertbus.Business
	Codec *identity.Codec
	// Jobs reads the jobs of an alert's feed and makes the public URLs.
	Jobs *jobbus.Business
	Log  *slog.Logger
}

type handlers struct {
	bus  *alertbus.Business
	jobs *jobbus.Business
}

// Routes mounts the alert routes. They are public (the gateway limits them
// per IP); a platform key with alerts:write reaches POST /v2/alerts too, and
// its alerts still wait for the seeker's click.
func Routes(app *fiber.App, cfg Config) {
	h := handlers{bus: cfg.Bus, jobs: cfg.Jobs}
	v2 := app.Group("/v2", cfg.Codec.Middleware())
	v2.Post("/alerts", h.create)
	v2.Get("/alerts/confirm", h.confirm)
	v2.Post("/alerts/confirm", h.confirm)
	v2.Get("/alerts/manage", h.show)
	v2.Post("/alerts/manage", h.update)
	v2.Get("/alerts/unsubscribe", h.unsubscribe)
	v2.Post("/alerts/unsubscribe", h.unsubscribe)
	v2.Get("/alerts/feed", h.feed)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	pageRoutes(app, h, cfg.Log)
}

// ScopeAlertsWrite is the key scope that marks a platform's alerts as its own.
const ScopeAlertsWrite = "alerts:write"

// MaxTokenLen is the longest link token accepted (the document's maxLength).
const MaxTokenLen = 512

// MaxEmailLen is the longest address accepted (RFC 5321's path limit).
const MaxEmailLen = 254

// Frequencies are the accepted frequencies.
var Frequencies = []string{alertbus.Instant, alertbus.Daily, alertbus.Weekly}

// Pending is the answer of POST /v2/alerts, the same whatever the
// address's state, so that nobody can learn whether an address has alerts.
type Pending struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

const createAnswer = "If this search is not confirmed yet for this address, a link to confirm it is on its way; " +
	"check your inbox and spam folder."

// ValidEmail reports a plain address (no display name, no comments).
func ValidEmail(s string) bool {
	if s == "" || len(s) > MaxEmailLen {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == "" && strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".")
}

func (h handlers) create(c *fiber.Ctx) error {
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(body.String("email")))
	freq := body.String("frequency")
	tz := body.String("time_zone")
	vals := map[string]string{}
	for _, k := range alertbus.SearchParams {
		switch k {
		case "remote":
			if v := body.OptIntOrBool(k); v != nil && *v != 0 {
				vals[k] = "true"
			}
		case "radius_km", "salary_min":
			if raw := body.JSON(k); len(raw) > 0 && raw[0] != '"' {
				vals[k] = strings.TrimSpace(string(raw)) // a JSON number: the query grammar validates it
				body.Ignore(k)
			} else {
				vals[k] = body.String(k)
			}
		default:
			vals[k] = body.String(k)
		}
	}
	if err := body.Err(nil); err != nil {
		return err
	}
	get := func(k string) string { return vals[k] }
	f, p := jobapp.ParseSearch(get)
	p = append(p, alertbus.CheckText(vals)...)
	if !ValidEmail(email) {
		p = append([]string{"email must be a valid address, e.g. name@example.com"}, p...)
	}
	switch freq {
	case "":
		freq = alertbus.Instant
	default:
		if !slices.Contains(Frequencies, freq) {
			p = append(p, "frequency must be one of "+strings.Join(Frequencies, ", "))
		}
	}
	// "": the city's zone, else UTC (alertbus.Save). "Local" is the server's,
	// no zone of the seeker's.
	if _, err := time.LoadLocation(tz); tz != "" && (err != nil || len(tz) > 64 || tz == "Local") {
		p = append(p, "time_zone must be an IANA time zone, e.g. Europe/Lisbon")
	}
	if len(p) == 0 && alertbus.Broad(f) {
		p = append(p, "the search is too broad: give at least one of q, city, job_type, remote, tag, near, salary_min")
	}
	if len(p) > 0 {
		return web.Validation("Validation failed", p)
	}
	var keyID int64
	if id := identity.From(c); id != nil && slices.Contains(id.Scopes, ScopeAlertsWrite) {
		keyID = id.KeyID
	}
	if _, err := h.bus.Save(c.UserContext(), alertbus.NewAlert{Email: email, Search: alertbus.Canonical(get), Filter: f,
		Frequency: freq, TimeZone: tz, KeyID: keyID}); err != nil {
		return err
	}
	return web.OK(c, http.StatusAccepted, Pending{Status: "pending_confirmation", Message: createAnswer})
}

// View is an alert as its management page shows it (to its link's holder).
type View struct {
	Search    map[string]string `json:"search"`
	Frequency string            `json:"frequency"`
	TimeZone  string            `json:"time_zone"`
	Confirmed bool              `json:"confirmed"`
	Paused    bool              `json:"paused"`
	Email     string            `json:"email"`
	CreatedAt time.Time         `json:"created_at"`
	// Feeds are the alert's feed URLs (a capability of their own, safe to
	// paste into a reader or share: they cannot manage the alert).
	Feeds *Feeds `json:"feeds,omitempty"`
}

func (h handlers) view(a alertbus.Alert) View {
	v := View{Search: map[string]string{}, Frequency: a.Frequency, TimeZone: a.TimeZone, Confirmed: a.ConfirmedAt != nil,
		Paused: a.Paused, Email: a.Email, CreatedAt: a.CreatedAt, Feeds: h.feeds(a)}
	q, _ := url.ParseQuery(a.Search)
	for k := range q {
		v.Search[k] = q.Get(k)
	}
	return v
}

// token reads the token from the query, or from a form or JSON body on POST.
func token(c *fiber.Ctx, body *web.Fields) string {
	if t := c.Query("token"); t != "" || body == nil {
		return t
	}
	return body.String("token")
}

func (h handlers) resolve(c *fiber.Ctx, purpose string, body *web.Fields) (alertbus.Alert, error) {
	t := token(c, body)
	if body != nil {
		body.Ignore("List-Unsubscribe") // RFC 8058's one-click POST sends List-Unsubscribe=One-Click
		if err := body.Err(nil); err != nil {
			return alertbus.Alert{}, err
		}
	}
	if t == "" {
		return alertbus.Alert{}, web.Validation("Validation failed", []string{"token is required"})
	}
	if len(t) > MaxTokenLen {
		return alertbus.Alert{}, web.Validation("Validation failed", []string{fmt.Sprintf("token must be at most %d characters", MaxTokenLen)})
	}
	a, err := h.bus.Resolve(c.UserContext(), purpose, t)
	if errors.Is(err, alertbus.ErrBadToken) {
		return a, web.NotFound("No alert matches this link; it may have been deleted, or expired unconfirmed.")
	}
	return a, err
}

// optBody decodes a POST's body when it has one.
func optBody(c *fiber.Ctx) (*web.Fields, error) {
	if c.Method() == fiber.MethodGet || len(c.Body()) == 0 {
		return nil, nil
	}
	return web.DecodeJSONOrForm(c)
}

func (h handlers) confirm(c *fiber.Ctx) error {
	body, err := optBody(c)
	if err != nil {
		return err
	}
	a, err := h.resolve(c, alertbus.PurposeConfirm, body)
	if err != nil {
		return err
	}
	if a, err = h.bus.Confirm(c.UserContext(), a.ID); err != nil {
		return notFound(err)
	}
	return web.OK(c, http.StatusOK, h.view(a))
}

func (h handlers) show(c *fiber.Ctx) error {
	a, err := h.resolve(c, alertbus.PurposeManage, nil)
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, h.view(a))
}

func (h handlers) update(c *fiber.Ctx) error {
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return err
	}
	freq := body.OptString("frequency")
	var paused *bool
	var p []string
	if raw := body.JSON("paused"); raw != nil {
		// JSON: a boolean only, as the document says
		switch strings.TrimSpace(string(raw)) {
		case "true", "false":
			b := strings.TrimSpace(string(raw)) == "true"
			paused = &b
		default:
			p = append(p, "paused must be a boolean")
		}
		body.Ignore("paused")
	} else if v := body.OptIntOrBool("paused"); v != nil {
		b := *v != 0
		paused = &b
	}
	if freq != nil && !slices.Contains(Frequencies, *freq) {
		p = append(p, "frequency must be one of "+strings.Join(Frequencies, ", "))
	}
	if len(p) > 0 {
		return web.Validation("Validation failed", p)
	}
	a, err := h.resolve(c, alertbus.PurposeManage, body)
	if err != nil {
		return err
	}
	if a, err = h.bus.Update(c.UserContext(), a.ID, freq, paused); err != nil {
		return notFound(err)
	}
	return web.OK(c, http.StatusOK, h.view(a))
}

// Deleted is the answer of an unsubscribe.
type Deleted struct {
	Status string `json:"status"`
}

func (h handlers) unsubscribe(c *fiber.Ctx) error {
	body, err := optBody(c)
	if err != nil {
		return err
	}
	a, err := h.resolve(c, alertbus.PurposeManage, body)
	if err != nil {
		return err
	}
	if err := h.bus.Delete(c.UserContext(), a.ID); err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, Deleted{Status: "deleted"})
}

func notFound(err error) error {
	if errors.Is(err, alertbus.ErrNotFound) {
		return web.NotFound("No alert matches this link; it may have been deleted.")
	}
	return err
}
