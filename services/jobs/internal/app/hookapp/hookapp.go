// Package hookapp is the HTTP layer of webhook endpoints: /v2/webhooks and
// its sub-routes (scope webhooks:manage, checked by the gateway).
package hookapp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// Config wires the handlers.
type Config struct {
	Bus   *hookbus.Business
	Codec *identity.Codec
}

// Deliveries listing limits.
const (
	DefaultDeliveries = 50
	MaxDeliveries     = 200
)

type handlers struct{ bus *hookbus.Business }

// Routes mounts /v2/webhooks behind the identity check. Every route
// changes or reveals an endpoint, so only live keys (the gateway checks the
// scope).
func Routes(app *fiber.App, cfg Config) {
	h := &handlers{bus: cfg.Bus}
	g := app.Group("/v2/webhooks", cfg.Codec.Middleware(), identity.RequireKind(identity.KindLive))
	g.Post("", h.create)
	g.Get("", h.list)
	g.Get("/:id_webhook", h.get)
	g.Patch("/:id_webhook", h.update)
	g.Delete("/:id_webhook", h.delete)
	g.Post("/:id_webhook/rotate-secret", h.rotate)
	g.Post("/:id_webhook/ping", h.ping)
	g.Get("/:id_webhook/deliveries", h.deliveries)
	g.Post("/:id_webhook/deliveries/:id_delivery/redeliver", h.redeliver)
	g.Post("/:id_webhook/recover", h.recover)
}

func owner(c *fiber.Ctx) hookbus.Owner {
	id := identity.From(c)
	return hookbus.Owner{SpaceID: id.SpaceID, KeyID: id.KeyID}
}

func toWebError(err error) error {
	var ve *validate.Error
	switch {
	case errors.As(err, &ve):
		return web.Validation("Validation failed", ve.Problems)
	case errors.Is(err, hookbus.ErrNotFound):
		return web.NotFound("Webhook endpoint not found")
	case errors.Is(err, hookbus.ErrTooMany):
		return web.Conflict("This key's owner has " + strconv.Itoa(hookbus.MaxEndpoints) + " webhook endpoints already; delete one first")
	}
	return err
}

// pathID reads a positive integer path parameter (422 naming it).
func pathID(c *fiber.Ctx, name string) (int64, error) {
	n, err := strconv.ParseInt(c.Params(name), 10, 64)
	if err != nil || n < 1 {
		return 0, web.Validation("Validation failed", []string{name + " must be a positive integer"})
	}
	return n, nil
}

// endpointDTO is a webhook endpoint as its owner sees it; the secret only
// in the answers that create or rotate it.
type endpointDTO struct {
	ID             int64      `json:"id"`
	URL            string     `json:"url"`
	Events         []string   `json:"events"`
	Description    string     `json:"description"`
	Email          *string    `json:"email"`
	Enabled        bool       `json:"enabled"`
	DisabledReason *string    `json:"disabled_reason"`
	FailingSince   *time.Time `json:"failing_since"`
	OldSecretUntil *time.Time `json:"previous_secret_until"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Secret         string     `json:"secret,omitempty"`
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

func toEndpointDTO(e hookbus.Endpoint) endpointDTO {
	return endpointDTO{ID: e.ID, URL: e.URL, Events: e.Events, Description: e.Description, Email: e.Email, Enabled: e.Enabled,
		DisabledReason: e.DisabledReason, FailingSince: utcPtr(e.FailingSince), OldSecretUntil: utcPtr(e.OldSecretUntil),
		CreatedAt: e.CreatedAt.UTC().Truncate(time.Second), UpdatedAt: e.UpdatedAt.UTC().Truncate(time.Second), Secret: e.Secret}
}

// readInput reads a create or update body; type problems are a 422.
func readInput(c *fiber.Ctx, update bool) (hookbus.Input, error) {
	var f web.Fields
	if err := web.DecodeJSON(c, &f); err != nil {
		return hookbus.Input{}, err
	}
	in := hookbus.Input{URL: f.OptString("url"), Description: f.OptString("description")}
	var rules []string
	if raw := f.JSON("events"); len(raw) > 0 && string(raw) != "null" {
		var evs []string
		if err := json.Unmarshal(raw, &evs); err != nil {
			rules = append(rules, "events must be an array of event type names")
		} else {
			in.Events = &evs
		}
	}
	f.Ignore("events")
	if raw := f.JSON("email"); string(raw) == "null" && update {
		in.ClearEmail = true
	}
	in.Email = f.OptString("email")
	if update {
		if raw := f.JSON("enabled"); len(raw) > 0 && string(raw) != "null" {
			v := f.Bool("enabled")
			in.Enabled = &v
		} else {
			f.Ignore("enabled")
		}
	}
	if err := f.Err(rules); err != nil {
		return hookbus.Input{}, err
	}
	return in, nil
}

func (h *handlers) create(c *fiber.Ctx) error {
	in, err := readInput(c, false)
	if err != nil {
		return err
	}
	e, err := h.bus.Create(c.UserContext(), owner(c), in)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusCreated, toEndpointDTO(e))
}

func (h *handlers) list(c *fiber.Ctx) error {
	es, err := h.bus.List(c.UserContext(), owner(c))
	if err != nil {
		return toWebError(err)
	}
	out := make([]endpointDTO, 0, len(es))
	for _, e := range es {
		out = append(out, toEndpointDTO(e))
	}
	return web.OK(c, http.StatusOK, fiber.Map{"webhooks": out})
}

func (h *handlers) get(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	e, err := h.bus.Get(c.UserContext(), owner(c), id)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, toEndpointDTO(e))
}

func (h *handlers) update(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	in, err := readInput(c, true)
	if err != nil {
		return err
	}
	e, err := h.bus.Update(c.UserContext(), owner(c), id, in)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, toEndpointDTO(e))
}

func (h *handlers) delete(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	if err := h.bus.Delete(c.UserContext(), owner(c), id); err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, fiber.Map{"id": id, "deleted": true})
}

func (h *handlers) rotate(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	e, err := h.bus.RotateSecret(c.UserContext(), owner(c), id)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusOK, toEndpointDTO(e))
}

// deliveryDTO is one delivery with its last attempt.
type deliveryDTO struct {
	ID             int64      `json:"id"`
	EventID        *string    `json:"event_id"`
	MessageID      string     `json:"message_id"`
	Type           string     `json:"type"`
	IDJob          *int64     `json:"id_job"`
	Replay         bool       `json:"replay"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	ResponseStatus *int       `json:"response_status"`
	ResponseBody   *string    `json:"response_body"`
	LatencyMS      *int       `json:"latency_ms"`
	Error          *string    `json:"error"`
	NextTryAt      *time.Time `json:"next_try_at"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

func toDeliveryDTO(d hookbus.Delivery) deliveryDTO {
	out := deliveryDTO{ID: d.ID, EventID: d.EventID, MessageID: d.MsgID, Type: d.Type, Replay: d.Replay, Status: d.Status,
		Attempts: d.Attempts, ResponseStatus: d.ResponseStatus, ResponseBody: d.ResponseBody, LatencyMS: d.LatencyMS,
		Error: d.LastError, NextTryAt: utcPtr(d.NextTryAt), CreatedAt: d.CreatedAt.UTC().Truncate(time.Second), FinishedAt: utcPtr(d.FinishedAt)}
	if d.JobID != 0 {
		j := d.JobID
		out.IDJob = &j
	}
	return out
}

func (h *handlers) ping(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	d, err := h.bus.Ping(c.UserContext(), owner(c), id)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusAccepted, toDeliveryDTO(d))
}

func (h *handlers) deliveries(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	q := web.Params(c)
	limit := q.Int("limit", DefaultDeliveries, 1, MaxDeliveries)
	before := q.Int("before", 0, 1, 1<<62)
	if err := q.Err(); err != nil {
		return err
	}
	ds, err := h.bus.Deliveries(c.UserContext(), owner(c), id, int64(before), limit)
	if err != nil {
		return toWebError(err)
	}
	out := make([]deliveryDTO, 0, len(ds))
	for _, d := range ds {
		out = append(out, toDeliveryDTO(d))
	}
	return web.OK(c, http.StatusOK, fiber.Map{"deliveries": out})
}

func (h *handlers) redeliver(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	did, err := pathID(c, "id_delivery")
	if err != nil {
		return err
	}
	d, err := h.bus.Redeliver(c.UserContext(), owner(c), id, did)
	if errors.Is(err, hookbus.ErrNotFound) {
		return web.NotFound("Delivery not found")
	}
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusAccepted, toDeliveryDTO(d))
}

func (h *handlers) recover(c *fiber.Ctx) error {
	id, err := pathID(c, "id_webhook")
	if err != nil {
		return err
	}
	var f web.Fields
	if err := web.DecodeJSON(c, &f); err != nil {
		return err
	}
	s := f.OptString("since")
	var rules []string
	var since time.Time
	if s == nil {
		rules = append(rules, "since is required: an RFC 3339 date-time")
	} else if since, err = time.Parse(time.RFC3339Nano, *s); err != nil {
		rules = append(rules, "since must be an RFC 3339 date-time, e.g. 2026-11-01T00:00:00Z")
	}
	if err := f.Err(rules); err != nil {
		return err
	}
	n, err := h.bus.Recover(c.UserContext(), owner(c), id, since)
	if err != nil {
		return toWebError(err)
	}
	return web.OK(c, http.StatusAccepted, fiber.Map{"queued": n})
}
