// Package dashapp is the space dashboard: server-rendered pages under
// /dashboard where a space's owners, admins and editors sign in with a
// link mailed to them (dashbus), see their spaces' jobs in every status and
// act on them through the jobs service's own transitions, and, as owners or
// admins of a Pro space, manage its API keys through the same key business
// as /v2/keys (keybus).
//
// Every page sets a CSP with no inline script, frame-ancestors 'none' and
// no referrer (the links carry secrets); every form carries a CSRF token
// (the session's once signed in, a double-submit cookie before) and its
// Origin is checked.
package dashapp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/jobsapi"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/keyapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*
var assetFS embed.FS

// Cookies of the dashboard, scoped to its path.
const (
	cookieSession = "cj_dash"
	cookiePre     = "cj_dash_pre" // the double-submit token before sign-in
	cookiePath    = "/dashboard"
	csrfField     = "_csrf"
)

// csp allows the dashboard's own script and style, nothing inline, and no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'none'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config wires the dashboard.
type Config struct {
	Log      *slog.Logger
	SignIn   *dashbus.Business
	Keys     *keybus.Business
	Backends *Backends
	// BaseURL is PUBLIC_BASE_URL: its origin is the only one forms are
	// accepted from, and https there makes the cookies Secure.
	BaseURL string
}

// App serves the dashboard.
type App struct {
	cfg    Config
	pages  map[string]*template.Template
	origin string
	secure bool
	assets fs.FS
}

// New parses the templates.
func New(cfg Config) (*App, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Host == "" {
		return nil, errors.New("dashboard: PUBLIC_BASE_URL must be an absolute URL")
	}
	a := &App{cfg: cfg, pages: map[string]*template.Template{}, origin: u.Scheme + "://" + u.Host, secure: u.Scheme == "https"}
	for _, name := range []string{"signin", "sent", "link", "message", "home", "space", "newkey"} {
		t, err := template.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		a.pages[name] = t
	}
	if a.assets, err = fs.Sub(assetFS, "assets"); err != nil {
		return nil, err
	}
	return a, nil
}

// Handlers are the dashboard's routes (routes.Pages), by "METHOD path".
func (a *App) Handlers() map[string]fiber.Handler {
	m := a.handlers()
	for k, h := range m {
		m[k] = func(c *fiber.Ctx) error {
			if err := h(c); err != nil {
				return pageError(err, a.cfg.Log, c.UserContext())
			}
			return nil
		}
	}
	return m
}

func (a *App) handlers() map[string]fiber.Handler {
	return map[string]fiber.Handler{
		"GET /dashboard":                                            a.home,
		"POST /dashboard/sign-in":                                   a.requestLink,
		"GET /dashboard/sign-in/link":                               a.link,
		"POST /dashboard/sign-in/link":                              a.signIn,
		"POST /dashboard/sign-out":                                  a.signOut,
		"GET /dashboard/assets/:file":                               a.asset,
		"GET /dashboard/spaces/:id<int>":                            a.space,
		"POST /dashboard/spaces/:id<int>/jobs/:job<int>/:action":    a.jobAction,
		"POST /dashboard/spaces/:id<int>/keys":                      a.createKey,
		"POST /dashboard/spaces/:id<int>/keys/:key<int>/revoke":     a.revokeKey,
		"POST /dashboard/spaces/:id<int>/keys/:key<int>/replace":    a.replaceKey,
		"POST /dashboard/spaces/:id<int>/imports":                   a.addImport,
		"POST /dashboard/spaces/:id<int>/imports/:src<int>/:action": a.importAction,
	}
}

// Unconfigured answers every dashboard route where the gateway runs
// without one (no SMTP or no database for it).
func Unconfigured() map[string]fiber.Handler {
	h := func(*fiber.Ctx) error { return web.NotFound("The dashboard is not configured on this server") }
	m := map[string]fiber.Handler{}
	for k := range (&App{}).handlers() {
		m[k] = h
	}
	return m
}

// view is what every page template reads.
type view struct {
	Title    string
	Session  *dashbus.Session
	CSRF     string
	Notice   string
	Problem  string
	Problems []string

	Email        string
	Token        string
	LinkMinutes  int
	SessionHours int
	Message      string

	Spaces []dashbus.Membership
	Space  dashbus.Membership
	Jobs   []jobsapi.SpaceJob
	// Numbers are the jobs' statistics of the last ChartDays days, by job
	// (a Pro space's; StatsNote says why there are none otherwise).
	Numbers      map[int64]*jobNumbers
	StatsNote    string
	KeysAllowed  bool
	Keys         []keyapp.Key
	Events       []keybus.Event
	Scopes       []string
	MaxRateLimit int
	NewKey       keyapp.Key
	Secret       string
	// ImportsAllowed: the user manages the space's import sources (the
	// keys' rule); ImportsNote says why they cannot be read.
	ImportsAllowed bool
	Sources        []importSource
	ImportsNote    string
	ImportKinds    []string
}

func (a *App) render(c *fiber.Ctx, status int, page string, v view) error {
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Status(status)
	return a.pages[page].ExecuteTemplate(c.Response().BodyWriter(), "layout", v)
}

func (a *App) cookie(c *fiber.Ctx, name, value string, ttl time.Duration, sameSite string) {
	ck := &fiber.Cookie{Name: name, Value: value, Path: cookiePath, HTTPOnly: true, Secure: a.secure, SameSite: sameSite}
	if ttl > 0 {
		ck.MaxAge = int(ttl.Seconds())
		ck.Expires = time.Now().Add(ttl)
	} else {
		ck.MaxAge = -1
		ck.Expires = time.Unix(0, 0)
	}
	c.Cookie(ck)
}

// preToken is the browser's double-submit token, set when missing.
func (a *App) preToken(c *fiber.Ctx) string {
	if v := c.Cookies(cookiePre); len(v) == 43 {
		return strings.Clone(v)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	a.cookie(c, cookiePre, v, 2*time.Hour, fiber.CookieSameSiteStrictMode)
	return v
}

// sameOrigin refuses a form posted from another site. Origin "null" is what
// Chromium sends for its own forms under no-referrer; Sec-Fetch-Site then
// says whether it was this site.
func (a *App) sameOrigin(c *fiber.Ctx) bool {
	site := c.Get("Sec-Fetch-Site")
	switch o := c.Get(fiber.HeaderOrigin); o {
	case "":
		return site == "" || site == "same-origin"
	case "null":
		return site == "same-origin"
	default:
		return o == a.origin
	}
}

var errCSRF = web.Forbidden("This form has expired or did not come from this site; reload the page and try again")

// form reads a posted form after the origin check.
func (a *App) form(c *fiber.Ctx) (*web.Fields, error) {
	if !a.sameOrigin(c) {
		return nil, errCSRF
	}
	f, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// preForm is a form posted before sign-in: its token must be the cookie's.
func (a *App) preForm(c *fiber.Ctx) (*web.Fields, error) {
	f, err := a.form(c)
	if err != nil {
		return nil, err
	}
	ck := c.Cookies(cookiePre)
	if tok := f.String(csrfField); ck == "" || !equal(tok, ck) {
		return nil, errCSRF
	}
	return f, nil
}

func equal(a, b string) bool {
	return len(a) == len(b) && subtleEqual(a, b)
}

// session is the request's signed-in session, nil when there is none.
func (a *App) session(c *fiber.Ctx) (*dashbus.Session, error) {
	s, err := a.cfg.SignIn.Session(c.UserContext(), c.Cookies(cookieSession))
	if errors.Is(err, dashbus.ErrNoSession) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// signedInForm is a form posted by a signed-in user: its token must be the session's.
func (a *App) signedInForm(c *fiber.Ctx) (*dashbus.Session, *web.Fields, error) {
	f, err := a.form(c)
	if err != nil {
		return nil, nil, err
	}
	s, err := a.session(c)
	if err != nil {
		return nil, nil, err
	}
	if s == nil {
		return nil, nil, web.Unauthorized("Your session has ended; sign in again")
	}
	if !dashbus.CheckCSRF(*s, f.String(csrfField)) {
		return nil, nil, errCSRF
	}
	return s, f, nil
}

func clientIP(c *fiber.Ctx) string { return strings.Clone(c.IP()) }

// GET /dashboard: the spaces of a signed-in user, else the sign-in form.
func (a *App) home(c *fiber.Ctx) error {
	s, err := a.session(c)
	if err != nil {
		return err
	}
	if s == nil {
		return a.render(c, http.StatusOK, "signin", view{Title: "Sign in", CSRF: a.preToken(c)})
	}
	spaces, err := a.cfg.SignIn.Memberships(c.UserContext(), *s)
	if err != nil {
		return err
	}
	return a.render(c, http.StatusOK, "home", view{Title: "Your spaces", Session: s, CSRF: dashbus.CSRFToken(*s), Spaces: spaces})
}

// POST /dashboard/sign-in: the same answer for every valid address.
func (a *App) requestLink(c *fiber.Ctx) error {
	f, err := a.preForm(c)
	if err != nil {
		return err
	}
	raw := f.String("email")
	if err := f.Err(nil); err != nil {
		return err
	}
	email, err := dashbus.NormalizeEmail(raw)
	if err != nil {
		return a.render(c, http.StatusUnprocessableEntity, "signin", view{Title: "Sign in", CSRF: a.preToken(c), Email: raw,
			Problem: "Enter an e-mail address such as name@example.com."})
	}
	if err := a.cfg.SignIn.RequestLink(c.UserContext(), email, clientIP(c)); err != nil {
		return err
	}
	return a.render(c, http.StatusOK, "sent", view{Title: "Check your mail", LinkMinutes: 15})
}

// linkProblem is the page for a link that does not work.
func (a *App) linkProblem(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, dashbus.ErrLinkExpired):
		return a.render(c, http.StatusGone, "message", view{Title: "This sign-in link has expired",
			Message: "Sign-in links work for 15 minutes. Ask for a new one."})
	case errors.Is(err, dashbus.ErrLinkUsed):
		return a.render(c, http.StatusGone, "message", view{Title: "This sign-in link was already used",
			Message: "Each link signs in once. Ask for a new one if you need to sign in again."})
	case errors.Is(err, dashbus.ErrLinkUnknown):
		return a.render(c, http.StatusNotFound, "message", view{Title: "This sign-in link is not valid",
			Message: "Check that the whole link was copied from the mail, or ask for a new one."})
	}
	return err
}

// GET /dashboard/sign-in/link?token=: a button that uses the link. Using it
// on a GET would let a mail scanner that follows links spend it.
func (a *App) link(c *fiber.Ctx) error {
	token := strings.Clone(c.Query("token"))
	s, err := a.cfg.SignIn.CheckLink(c.UserContext(), token)
	if err != nil {
		return a.linkProblem(c, err)
	}
	return a.render(c, http.StatusOK, "link", view{Title: "Sign in", Email: s.Email, Token: token, CSRF: a.preToken(c),
		SessionHours: int(a.cfg.SignIn.SessionTTL().Hours())})
}

// POST /dashboard/sign-in/link: uses the link, opens the session.
func (a *App) signIn(c *fiber.Ctx) error {
	f, err := a.preForm(c)
	if err != nil {
		return err
	}
	token := f.String("token")
	if err := f.Err(nil); err != nil {
		return err
	}
	s, cookie, err := a.cfg.SignIn.SignIn(c.UserContext(), token, clientIP(c))
	if err != nil {
		return a.linkProblem(c, err)
	}
	a.cookie(c, cookieSession, cookie, time.Until(s.ExpiresAt), fiber.CookieSameSiteLaxMode)
	a.cookie(c, cookiePre, "", 0, fiber.CookieSameSiteStrictMode)
	return c.Redirect("/dashboard", http.StatusSeeOther)
}

// POST /dashboard/sign-out
func (a *App) signOut(c *fiber.Ctx) error {
	s, _, err := a.signedInForm(c)
	if err != nil {
		return err
	}
	if err := a.cfg.SignIn.SignOut(c.UserContext(), *s); err != nil {
		return err
	}
	a.cookie(c, cookieSession, "", 0, fiber.CookieSameSiteLaxMode)
	return c.Redirect("/dashboard", http.StatusSeeOther)
}

// GET /dashboard/assets/:file
func (a *App) asset(c *fiber.Ctx) error {
	name := c.Params("file")
	b, err := fs.ReadFile(a.assets, name)
	if err != nil || strings.Contains(name, "/") {
		return web.NotFound("No such file")
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		c.Set(fiber.HeaderContentType, "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(b)
}

func pathID(c *fiber.Ctx, name string) int64 {
	id, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// membership is the signed-in user's membership of the path's space;
// a space they do not administer is a 404, as one that does not exist.
func (a *App) membership(c *fiber.Ctx, s *dashbus.Session) (dashbus.Membership, error) {
	m, err := a.cfg.SignIn.Membership(c.UserContext(), *s, pathID(c, "id"))
	if errors.Is(err, dashbus.ErrNotFound) {
		return m, web.NotFound("You do not administer this space")
	}
	return m, err
}

// spaceForm is a form posted by a signed-in user about the path's space:
// the session's token checked, then the user's membership of the space.
func (a *App) spaceForm(c *fiber.Ctx) (*dashbus.Session, *web.Fields, dashbus.Membership, error) {
	s, f, err := a.signedInForm(c)
	if err != nil {
		return nil, nil, dashbus.Membership{}, err
	}
	m, err := a.membership(c, s)
	return s, f, m, err
}

// showNewKey renders a key just created or replaced, its secret this once.
func (a *App) showNewKey(c *fiber.Ctx, s *dashbus.Session, m dashbus.Membership, k keybus.Key, raw string) error {
	return a.render(c, http.StatusCreated, "newkey", view{Title: "Your new key", Session: s, CSRF: dashbus.CSRFToken(*s), Space: m,
		NewKey: keyapp.ToKey(k, time.Now()), Secret: raw})
}

func (a *App) actor(c *fiber.Ctx, s *dashbus.Session, m dashbus.Membership) keybus.Actor {
	return keybus.DashboardActor(s.Email, m.SpaceID, m.Role, m.IsPro, clientIP(c))
}

// spaceView gathers a space's page.
func (a *App) spaceView(ctx context.Context, c *fiber.Ctx, s *dashbus.Session, m dashbus.Membership) (view, error) {
	v := view{Title: m.Name, Session: s, CSRF: dashbus.CSRFToken(*s), Space: m}
	jobs, err := a.cfg.Backends.SpaceJobs(ctx, m.SpaceID)
	if err != nil {
		return v, err
	}
	v.Jobs = jobs
	switch {
	case !m.IsPro:
		v.StatsNote = "Views and apply clicks of your jobs are included in the Pro plan."
	case len(jobs) > 0:
		// The numbers are a courtesy of the page: without them it still shows.
		st, err := a.cfg.Backends.SpaceStats(ctx, m.SpaceID, ChartDays)
		if err != nil {
			a.cfg.Log.WarnContext(ctx, "dashboard: job statistics unavailable", "space", m.SpaceID, "error", err)
			v.StatsNote = "The numbers of your jobs cannot be read right now."
			break
		}
		v.Numbers = make(map[int64]*jobNumbers, len(st.Jobs))
		for _, j := range st.Jobs {
			v.Numbers[j.ID] = &jobNumbers{SpaceJobStat: j, Chart: chart(j.Days)}
		}
	}
	if keybus.MayManageKeys(m.Role, m.IsPro) {
		actor := a.actor(c, s, m)
		keys, err := a.cfg.Keys.ListFor(ctx, actor)
		if err != nil {
			return v, err
		}
		now := time.Now()
		for _, k := range keys {
			v.Keys = append(v.Keys, keyapp.ToKey(k, now))
		}
		if v.Events, err = a.cfg.Keys.EventsFor(ctx, actor, 0, 20); err != nil {
			return v, err
		}
		v.KeysAllowed, v.Scopes, v.MaxRateLimit = true, keybus.SpaceKeyScopes, a.cfg.Keys.MaxRateLimit()
		// The sources are a part of the page: without them it still shows.
		v.ImportsAllowed, v.ImportKinds = true, importKinds
		if v.Sources, err = a.cfg.Backends.ImportSources(ctx, m.SpaceID); err != nil {
			a.cfg.Log.WarnContext(ctx, "dashboard: import sources unavailable", "space", m.SpaceID, "error", err)
			v.ImportsNote = "Your import sources cannot be read right now."
		}
	}
	return v, nil
}

// GET /dashboard/spaces/:id
func (a *App) space(c *fiber.Ctx) error {
	s, err := a.session(c)
	if err != nil {
		return err
	}
	if s == nil {
		return c.Redirect("/dashboard", http.StatusSeeOther)
	}
	m, err := a.membership(c, s)
	if err != nil {
		return err
	}
	v, err := a.spaceView(c.UserContext(), c, s, m)
	if err != nil {
		return err
	}
	v.Notice = notices[c.Query("done")]
	return a.render(c, http.StatusOK, "space", v)
}

// notices are the messages a redirect after an action names.
var notices = map[string]string{
	"publish": "The job is published.", "pause": "The job is paused.", "resume": "The job is live again.",
	"relist": "The job is relisted.", "close": "The position is closed.", "unpublish": "The job is unpublished.",
	"revoked":      "The key is revoked: it stops working within seconds.",
	"import-added": "The import source is added: its first poll runs now.", "import-sync": "The source is polled now.",
	"import-delete": "The import source is deleted; its jobs stay as they are.",
}

// POST /dashboard/spaces/:id/jobs/:job/:action: the job's transition, by
// the jobs service's rules, as the space's key would send it.
func (a *App) jobAction(c *fiber.Ctx) error {
	s, _, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	action := c.Params("action")
	if !slices.Contains([]string{"publish", "pause", "resume", "relist", "close", "unpublish"}, action) {
		return web.NotFound("No such action")
	}
	action = strings.Clone(action)
	status, msg, err := a.cfg.Backends.Transition(c.UserContext(), m.SpaceID, pathID(c, "job"), action, clientIP(c), web.RequestID(c))
	if err != nil {
		return err
	}
	if status >= 300 {
		v, err := a.spaceView(c.UserContext(), c, s, m)
		if err != nil {
			return err
		}
		v.Problem = msg
		if status >= 500 {
			v.Problem = "The jobs service did not answer; try again in a moment."
		}
		return a.render(c, status, "space", v)
	}
	return c.Redirect("/dashboard/spaces/"+strconv.FormatInt(m.SpaceID, 10)+"?done="+action, http.StatusSeeOther)
}

// keyProblem renders the space page with a key rule's refusal.
func (a *App) keyProblem(c *fiber.Ctx, s *dashbus.Session, m dashbus.Membership, err error) error {
	var probs keybus.Problems
	status := http.StatusUnprocessableEntity
	v, verr := a.spaceView(c.UserContext(), c, s, m)
	if verr != nil {
		return verr
	}
	switch {
	case errors.As(err, &probs):
		v.Problems = probs
	case errors.Is(err, keybus.ErrForbidden), errors.Is(err, keybus.ErrNotFound), errors.Is(err, keybus.ErrTooMany), errors.Is(err, keybus.ErrRevoked):
		e := web.Classify(keyapp.Error(err))
		status, v.Problem = e.Status, e.Message
	default:
		return err
	}
	return a.render(c, status, "space", v)
}

// POST /dashboard/spaces/:id/keys
func (a *App) createKey(c *fiber.Ctx) error {
	s, f, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	r := keybus.KeyRequest{Name: f.String("name"), Scopes: f.Strings("scopes"), Restricted: f.Bool("restricted")}
	r.SetRateLimit(f.OptInt("rate_limit_per_minute"))
	if probs := f.Problems(nil); len(probs) > 0 {
		return a.keyProblem(c, s, m, keybus.Problems(probs))
	}
	k, raw, err := a.cfg.Keys.CreateFor(c.UserContext(), a.actor(c, s, m), r)
	if err != nil {
		return a.keyProblem(c, s, m, err)
	}
	return a.showNewKey(c, s, m, k, raw)
}

// POST /dashboard/spaces/:id/keys/:key/revoke
func (a *App) revokeKey(c *fiber.Ctx) error {
	s, _, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	// The dashboard itself manages keys: no key need be left that can.
	if err := a.cfg.Keys.RevokeFor(c.UserContext(), a.actor(c, s, m), pathID(c, "key"), true); err != nil {
		return a.keyProblem(c, s, m, err)
	}
	return c.Redirect("/dashboard/spaces/"+strconv.FormatInt(m.SpaceID, 10)+"?done=revoked", http.StatusSeeOther)
}

// POST /dashboard/spaces/:id/keys/:key/replace
func (a *App) replaceKey(c *fiber.Ctx) error {
	s, f, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	grace := f.OptInt("grace_seconds")
	if probs := f.Problems(nil); len(probs) > 0 {
		return a.keyProblem(c, s, m, keybus.Problems(probs))
	}
	var g time.Duration
	if grace != nil {
		if *grace < 0 || *grace > int64(keybus.MaxGrace.Seconds()) {
			return a.keyProblem(c, s, m, keybus.Problems{"grace_seconds must be between 0 and 604800"})
		}
		g = time.Duration(*grace) * time.Second
	}
	k, raw, err := a.cfg.Keys.RotateFor(c.UserContext(), a.actor(c, s, m), pathID(c, "key"), g)
	if err != nil {
		return a.keyProblem(c, s, m, err)
	}
	return a.showNewKey(c, s, m, k, raw)
}

func subtleEqual(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
