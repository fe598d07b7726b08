package blogapp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// maxFilterLen bounds the category and tag filters (characters).
const maxFilterLen = 100

// blog answers GET /v2/blog: one post when slug is given, a page otherwise.
// With slug the list parameters have no effect, but are still checked.
func (h *handlers) blog(c *fiber.Ctx) error {
	q := web.Params(c)
	slug, hasSlug := q.NonEmptyText("slug", 200)
	category, _ := q.NonEmptyText("category", maxFilterLen)
	tag, _ := q.NonEmptyText("tag", maxFilterLen)
	limit := q.Int("limit", postbus.DefaultLimit, 1, postbus.MaxLimit)
	offset := q.Int("offset", 0, 0, postbus.MaxOffset)
	if err := q.Err(); err != nil {
		return err
	}
	if hasSlug {
		return h.one(c, slug)
	}
	page, err := h.bus.List(c.UserContext(), postbus.Filter{Category: category, Tag: tag, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, toListJSON(page, limit, offset))
}

func (h *handlers) one(c *fiber.Ctx, slug string) error {
	if !postbus.IsSlug(slug) {
		// No post can have such a slug; answer as for any unknown one.
		return web.NotFound("No published post has this slug")
	}
	p, err := h.bus.BySlug(c.UserContext(), slug)
	if errors.Is(err, postbus.ErrNotFound) {
		return web.NotFound("No published post has the slug " + strconv.Quote(slug))
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, postDetailJSON{postJSON: toPostJSON(p), HTML: p.BodyHTML})
}
