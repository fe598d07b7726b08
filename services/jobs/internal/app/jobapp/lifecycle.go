package jobapp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/jobsapi"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// get answers GET /v2/jobs/{id_job}.
func (h *handlers) get(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id_job"), 10, 64)
	if err != nil || id < 1 {
		return web.Validation("Validation failed", []string{"id_job must be a positive integer"})
	}
	who := caller(c)
	d, err := h.bus.Get(c.UserContext(), who, id)
	if err != nil {
		return toWebError(err)
	}
	// The links are for a key that may change the job, so not a read-only one.
	owner := identity.From(c).Kind == identity.KindLive && jobbus.Owns(who, d)
	out := h.toJobDetailDTO(d, owner)
	if owner {
		dist, err := indexbus.Record(c.UserContext(), h.cfg.Announcements, d.ID, d.Status, d.Plan.ID, h.cfg.AggregatorPlans)
		if err != nil {
			return err
		}
		out.Distribution = &dist
	}
	return web.OK(c, http.StatusOK, out)
}

// transitionDTO answers a transition.
type transitionDTO struct {
	JobID  int64  `json:"job_id"`
	Status string `json:"status"`
	Action string `json:"action"`
}

// conflictDetails are the details of a refused transition (409).
type conflictDetails struct {
	Status     string  `json:"status"`
	Event      string  `json:"event"`
	PaymentURL *string `json:"payment_url,omitempty"`
}

// transition answers POST /v2/jobs/{publish,pause,resume,relist,close,unpublish}.
func (h *handlers) transition(ev jobbus.Event) fiber.Handler {
	return func(c *fiber.Ctx) error {
		var req web.Fields // the body of POST /v2/jobs/{event}
		if err := web.DecodeJSON(c, &req); err != nil {
			return err
		}
		id := req.OptInt("job_id")
		var rules []string
		switch {
		case id == nil:
			rules = []string{"job_id is required"}
		case *id < 1:
			rules = []string{"job_id must be a positive integer"}
		}
		if err := req.Err(rules); err != nil {
			return err
		}
		res, err := h.bus.Transition(c.UserContext(), caller(c), *id, ev)
		var ce *jobbus.ConflictError
		if errors.As(err, &ce) {
			return &web.Error{Status: http.StatusConflict, Code: web.CodeForStatus(http.StatusConflict), Message: ce.Message,
				Details: conflictDetails{Status: ce.Status, Event: string(ev), PaymentURL: ce.PaymentURL}}
		}
		if err != nil {
			return toWebError(err)
		}
		h.writes.inc(res.Action)
		return web.OK(c, http.StatusOK, transitionDTO{JobID: res.JobID, Status: res.Status, Action: res.Action})
	}
}

// GET /internal/spaces/:id/jobs: a space's jobs in every status with their
// links and the transitions allowed now, for the gateway's dashboard (which
// has checked that its user administers the space).
func (h *handlers) spaceJobs(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return web.Validation("Invalid path parameter", []string{"id must be a positive integer"})
	}
	jobs, err := h.bus.SpaceJobs(c.UserContext(), id)
	if err != nil {
		return err
	}
	out := jobsapi.SpaceJobs{Jobs: make([]jobsapi.SpaceJob, 0, len(jobs))}
	for _, d := range jobs {
		l := h.bus.Links(d)
		actions := []string{}
		for _, ev := range h.bus.Actions(d) {
			actions = append(actions, string(ev))
		}
		out.Jobs = append(out.Jobs, jobsapi.SpaceJob{ID: d.ID, Title: d.Title, Company: d.Company, CityName: d.CityName,
			Status: d.Status, PlanName: d.Plan.Name, PlanPrice: d.Plan.Price, PlanCurrency: d.Plan.Currency, IsPaid: d.IsPaid,
			DateAdded: d.DateAdded, ExpirationDate: d.ExpirationDate, UpdatedAt: d.UpdatedAt,
			URL: l.URL, EditURL: l.EditURL, ViewURL: l.ViewURL, PaymentURL: l.PaymentURL, Actions: actions})
	}
	return web.OK(c, http.StatusOK, out)
}
