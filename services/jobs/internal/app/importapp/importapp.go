// Package importapp is the HTTP layer of feed-pull import sources:
// /v2/import/sources and its sub-routes (scopes jobs:write for the changes,
// jobs:read for the reads, as the batch routes; checked by the gateway).
package importapp

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Config wires the handlers.
type Config struct {
	Bus   *importbus.Business
	Codec *identity.Codec
}

// Runs listing limits.
const (
	DefaultRuns = 20
	MaxRuns     = 100
)

type handlers struct{ bus *importbus.Business }

// Routes mounts /v2/import/sources behind the identity check (live keys
// only: a source writes real jobs).
func Routes(app *fiber.App, cfg Config) {
	h := &handlers{bus: cfg.Bus}
	g := app.Group("/v2/import/sources", cfg.Codec.Middleware(), identity.RequireKind(identity.KindLive))
	g.Post("", h.create)
	g.Get("", h.list)
	g.Get("/:id_source", h.get)
	g.Delete("/:id_source", h.delete)
	g.Get("/:id_source/runs", h.runs)
	g.Post("/:id_source/sync", h.sync)
}

func caller(c *fiber.Ctx) jobbus.Caller {
	id := identity.From(c)
	return jobbus.Caller{KeyID: id.KeyID, SpaceID: id.SpaceID, TrustedImporter: id.TrustedImporter}
}

func owner(c *fiber.Ctx) importbus.Owner { return importbus.OwnerOf(caller(c)) }

func toWebError(err error) error {
	var ve *validate.Error
	switch {
	case errors.As(err, &ve):
		return web.Validation("Validation failed", ve.Problems)
	case errors.Is(err, importbus.ErrNotFound):
		// Another owner's source is not found either: its id says nothing.
		return web.NotFound("Import source not found")
	case errors.Is(err, importbus.ErrTooMany):
		return web.Conflict("This key's owner has " + strconv.Itoa(importbus.MaxSources) + " import sources already; delete one first")
	case errors.Is(err, importbus.ErrPlan):
		return web.Forbidden("Import sources are included in the Pro plan: this key's space is not a confirmed Pro space. " +
			"Upgrade the space to Pro, or register the source with a platform key")
	case errors.Is(err, jobbus.ErrDirectoryUnavailable):
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The space directory is unavailable; retry shortly"}
	}
	return err
}

// pathID reads the source id (422 naming it).
func pathID(c *fiber.Ctx) (int64, error) {
	n, err := strconv.ParseInt(c.Params("id_source"), 10, 64)
	if err != nil || n < 1 {
		return 0, web.Validation("Validation failed", []string{"id_source must be a positive integer"})
	}
	return n, nil
}

// runDTO is one poll of a source.
type runDTO struct {
	ID          int64                `json:"id"`
	StartedAt   time.Time            `json:"started_at"`
	FinishedAt  time.Time            `json:"finished_at"`
	NotModified bool                 `json:"not_modified"`
	Positions   int                  `json:"positions"`
	Counts      map[string]int       `json:"counts"`
	RowErrors   []importbus.RowError `json:"row_errors"`
	Error       *string              `json:"error"`
}

func toRunDTO(r importbus.Run) runDTO {
	out := runDTO{ID: r.ID, StartedAt: r.StartedAt.UTC().Truncate(time.Millisecond), FinishedAt: r.FinishedAt.UTC().Truncate(time.Millisecond),
		NotModified: r.NotModified, Positions: r.Positions, RowErrors: r.RowErrors, Error: r.Error,
		Counts: map[string]int{"created": r.Created, "updated": r.Updated, "unchanged": r.Unchanged, "closed": r.Closed, "error": r.Errors}}
	if out.RowErrors == nil {
		out.RowErrors = []importbus.RowError{}
	}
	return out
}

// sourceDTO is a source as its owner sees it.
type sourceDTO struct {
	ID              int64      `json:"id"`
	Kind            string     `json:"kind"`
	Token           *string    `json:"token"`
	URL             *string    `json:"url"`
	FeedURL         string     `json:"feed_url"`
	Company         string     `json:"company"`
	CityName        string     `json:"city_name"`
	Tags            string     `json:"tags"`
	IntervalMinutes int        `json:"interval_minutes"`
	Mode            string     `json:"mode"`
	RefPrefix       string     `json:"external_ref_prefix"`
	NextPollAt      time.Time  `json:"next_poll_at"`
	LastPolledAt    *time.Time `json:"last_polled_at"`
	LastError       *string    `json:"last_error"`
	LastRun         *runDTO    `json:"last_run"`
	CreatedAt       time.Time  `json:"created_at"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toSourceDTO(s importbus.Source) sourceDTO {
	out := sourceDTO{ID: s.ID, Kind: s.Kind, Token: optional(s.Token), URL: optional(s.URL), FeedURL: s.FeedURL, Company: s.Company,
		CityName: s.CityName, Tags: s.Tags, IntervalMinutes: int(s.Interval / time.Minute), Mode: s.Mode,
		RefPrefix: jobbus.SourceRef(s.ID), NextPollAt: s.NextPollAt.UTC().Truncate(time.Second), LastError: s.LastError,
		CreatedAt: s.CreatedAt.UTC().Truncate(time.Second)}
	if s.LastPolledAt != nil {
		t := s.LastPolledAt.UTC().Truncate(time.Second)
		out.LastPolledAt = &t
	}
	if s.LastRun != nil {
		r := toRunDTO(*s.LastRun)
		out.LastRun = &r
	}
	return out
}

func (h *handlers) create(c *fiber.Ctx) error {
	var f web.Fields
	if err := web.DecodeJSON(c, &f); err != nil {
		return err
	}
	in := importbus.Input{Kind: f.OptString("kind"), Token: f.OptString("token"), URL: f.OptString("url"), Mode: f.OptString("mode"),
		Company: f.OptString("company"), CityName: f.OptString("city_name"), Tags: f.OptString("tags"),
		IntervalMinutes: f.OptInt("interval_minutes")}
	if p := f.Problems(nil); len(p) > 0 {
		return web.Validation("Validation failed", p)
	}
	s, err := h.bus.Register(c.UserContext(), caller(c), in)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusCreated, toSourceDTO(s))
}

func (h *handlers) list(c *fiber.Ctx) error {
	ss, err := h.bus.List(c.UserContext(), owner(c))
	if err != nil {
		return toWebError(err)
	}
	out := make([]sourceDTO, 0, len(ss))
	for _, s := range ss {
		out = append(out, toSourceDTO(s))
	}
	return web.OK(c, http.StatusOK, fiber.Map{"sources": out})
}

func (h *handlers) get(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	s, err := h.bus.Get(c.UserContext(), owner(c), id)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, toSourceDTO(s))
}

func (h *handlers) delete(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := h.bus.Delete(c.UserContext(), owner(c), id); err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, fiber.Map{"id": id, "deleted": true})
}

func (h *handlers) sync(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	s, err := h.bus.Sync(c.UserContext(), owner(c), id)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusAccepted, toSourceDTO(s))
}

// runs lists a source's runs, newest first, a page of limit before the run
// id before (the last one's id of the previous page).
func (h *handlers) runs(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	q := web.Params(c)
	limit := q.Int("limit", DefaultRuns, 1, MaxRuns)
	before := q.Int("before", 0, 1, 1<<62)
	if err := q.Err(); err != nil {
		return err
	}
	rs, err := h.bus.Runs(c.UserContext(), owner(c), id, int64(before), limit)
	if err != nil {
		return toWebError(err)
	}
	out := make([]runDTO, 0, len(rs))
	for _, r := range rs {
		out = append(out, toRunDTO(r))
	}
	var next *int64
	if len(rs) == limit {
		n := rs[len(rs)-1].ID
		next = &n
	}
	return web.OK(c, http.StatusOK, fiber.Map{"runs": out, "next_before": next})
}
