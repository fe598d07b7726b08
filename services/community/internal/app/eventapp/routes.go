// Package eventapp answers GET /v2/events and the public events feed.
package eventapp

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// Config holds the handlers' dependencies.
type Config struct {
	Events        *eventbus.Business
	PublicBaseURL string
}

type handlers struct{ cfg Config }

// Routes registers the event routes on the /v2 group.
func Routes(r fiber.Router, cfg Config) {
	h := handlers{cfg: cfg}
	r.Get("/events", h.list)
	r.Get("/vine/events", h.feed)
}

func (h handlers) list(c *fiber.Ctx) error {
	f, p, problems := parseFilter(c)
	if len(problems) > 0 {
		return web.Validation("Validation failed", problems)
	}
	var caller eventbus.Caller
	if id := identity.From(c); id != nil {
		caller.SpaceID = id.SpaceID
	}
	events, total, err := h.cfg.Events.Query(c.UserContext(), caller, f, p)
	if errors.Is(err, eventbus.ErrOtherSpace) {
		return web.Forbidden("This API key is scoped to another space; it may read only its own space's events")
	}
	if err != nil {
		return err
	}
	out := List{Events: make([]Event, len(events)), Pagination: web.NewPagination(total, p.Size, p.Offset(), len(events))}
	for i, e := range events {
		out.Events[i] = toEvent(e, h.cfg.PublicBaseURL)
	}
	return web.OK(c, http.StatusOK, out)
}

func (h handlers) feed(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", DefaultFeed, 1, MaxFeed)
	format := web.FeedFormat(q)
	if err := q.Err(); err != nil {
		return err
	}
	if format != web.FormatVine {
		return h.standardFeed(c, format, limit)
	}
	events, err := h.cfg.Events.Upcoming(c.UserContext(), limit)
	if err != nil {
		return err
	}
	base := strings.TrimRight(h.cfg.PublicBaseURL, "/")
	items := make([]FeedItem, len(events))
	for i, e := range events {
		items[i] = toFeedItem(e, base)
	}
	return web.SendCacheable(c, web.NewFeed("coworkjobs: upcoming events", base+"/v2/vine/events", base+"/events", items), 60)
}
