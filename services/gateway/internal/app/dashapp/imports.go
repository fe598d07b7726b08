package dashapp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// importSource is a space's import source as GET /v2/import/sources shows
// it (the fields the page uses).
type importSource struct {
	ID              int64      `json:"id"`
	Kind            string     `json:"kind"`
	FeedURL         string     `json:"feed_url"`
	IntervalMinutes int        `json:"interval_minutes"`
	NextPollAt      time.Time  `json:"next_poll_at"`
	LastError       *string    `json:"last_error"`
	LastRun         *importRun `json:"last_run"`
}

type importRun struct {
	FinishedAt  time.Time      `json:"finished_at"`
	NotModified bool           `json:"not_modified"`
	Positions   int            `json:"positions"`
	Counts      map[string]int `json:"counts"`
	Error       *string        `json:"error"`
}

// importKinds are the kinds the add form offers (importbus's, in the
// document's order).
var importKinds = []string{"greenhouse", "lever", "ashby", "personio", "json"}

// spaceLive is the identity of a live key of the space, as the dashboard
// acts for it (Transition's).
func spaceLive(spaceID int64, scope, clientIP, requestID string) identity.Identity {
	return identity.Identity{Kind: identity.KindLive, SpaceID: spaceID, Scopes: []string{scope}, ClientIP: clientIP, RequestID: requestID}
}

// ImportSources lists a space's import sources through the API's route,
// as a key of the space would.
func (b *Backends) ImportSources(ctx context.Context, spaceID int64) ([]importSource, error) {
	var out struct {
		Sources []importSource `json:"sources"`
	}
	status, _, err := b.do(ctx, http.MethodGet, b.JobsURL+"/v2/import/sources", spaceLive(spaceID, "jobs:read", "", ""), nil, &out)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, unavailable(fmt.Errorf("import sources of space: %d", status))
	}
	return out.Sources, nil
}

// ImportChange registers (path "", body), syncs ("/<id>/sync") or deletes
// (DELETE "/<id>") a space's source through the API's routes, by their
// rules (validation, the Pro plan, ownership). It returns the answer's
// status and, for a refusal, its message and problems.
func (b *Backends) ImportChange(ctx context.Context, spaceID int64, method, path string, body any, clientIP, requestID string) (int, []string, error) {
	status, env, err := b.do(ctx, method, b.JobsURL+"/v2/import/sources"+path, spaceLive(spaceID, "jobs:write", clientIP, requestID), body, nil)
	if err != nil {
		return 0, nil, err
	}
	var msgs []string
	if env != nil && env.Error != nil {
		msgs = append(msgs, env.Error.Message)
		if d, ok := env.Error.Details.([]any); ok {
			for _, p := range d {
				if s, ok := p.(string); ok {
					msgs = append(msgs, s)
				}
			}
		}
	}
	return status, msgs, nil
}

// POST /dashboard/spaces/:id/imports: register a source for the space.
func (a *App) addImport(c *fiber.Ctx) error {
	s, f, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	if !keybus.MayManageKeys(m.Role, m.IsPro) {
		return web.Forbidden("Import sources are part of Pro, for a space's owners and admins")
	}
	body := map[string]any{}
	for _, name := range []string{"kind", "token", "url", "company", "city_name", "tags"} {
		if v := strings.TrimSpace(f.String(name)); v != "" {
			body[name] = v
		}
	}
	if v := strings.TrimSpace(f.String("interval_minutes")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return a.importProblem(c, s, m, http.StatusUnprocessableEntity, []string{"interval_minutes must be a whole number of minutes"})
		}
		body["interval_minutes"] = n
	}
	f.Ignore("_csrf")
	if probs := f.Problems(nil); len(probs) > 0 {
		return a.importProblem(c, s, m, http.StatusUnprocessableEntity, probs)
	}
	status, msgs, err := a.cfg.Backends.ImportChange(c.UserContext(), m.SpaceID, http.MethodPost, "", body, clientIP(c), web.RequestID(c))
	if err != nil {
		return err
	}
	if status >= 300 {
		return a.importProblem(c, s, m, status, msgs)
	}
	return c.Redirect("/dashboard/spaces/"+strconv.FormatInt(m.SpaceID, 10)+"?done=import-added#imports-h", http.StatusSeeOther)
}

// POST /dashboard/spaces/:id/imports/:src/:action: sync or delete.
func (a *App) importAction(c *fiber.Ctx) error {
	s, _, m, err := a.spaceForm(c)
	if err != nil {
		return err
	}
	if !keybus.MayManageKeys(m.Role, m.IsPro) {
		return web.Forbidden("Import sources are part of Pro, for a space's owners and admins")
	}
	action := c.Params("action")
	if !slices.Contains([]string{"sync", "delete"}, action) {
		return web.NotFound("No such action")
	}
	action = strings.Clone(action)
	path, method := "/"+strconv.FormatInt(pathID(c, "src"), 10), http.MethodDelete
	if action == "sync" {
		path, method = path+"/sync", http.MethodPost
	}
	status, msgs, err := a.cfg.Backends.ImportChange(c.UserContext(), m.SpaceID, method, path, nil, clientIP(c), web.RequestID(c))
	if err != nil {
		return err
	}
	if status >= 300 {
		return a.importProblem(c, s, m, status, msgs)
	}
	return c.Redirect("/dashboard/spaces/"+strconv.FormatInt(m.SpaceID, 10)+"?done=import-"+action+"#imports-h", http.StatusSeeOther)
}

// importProblem renders the space page with the API's refusal.
func (a *App) importProblem(c *fiber.Ctx, s *dashbus.Session, m dashbus.Membership, status int, msgs []string) error {
	v, err := a.spaceView(c.UserContext(), c, s, m)
	if err != nil {
		return err
	}
	switch {
	case status >= 500:
		v.Problem = "The jobs service did not answer; try again in a moment."
	case len(msgs) > 0:
		v.Problem, v.Problems = msgs[0], msgs[1:]
	}
	return a.render(c, status, "space", v)
}
