package blogapp

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// Feed bounds (docs/internal-api.md).
const (
	FeedDefaultLimit = 20
	FeedMaxLimit     = 50
)

// feed answers GET /v2/vine/blog: the latest public posts in the shared feed
// shape, cacheable (ETag, 304, Cache-Control).
func (h *handlers) feed(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", FeedDefaultLimit, 1, FeedMaxLimit)
	if err := q.Err(); err != nil {
		return err
	}
	page, err := h.bus.List(c.UserContext(), postbus.Filter{Limit: limit})
	if err != nil {
		return err
	}
	base := h.cfg.PublicBaseURL
	items := make([]feedItemJSON, len(page.Posts))
	for i, p := range page.Posts {
		items[i] = feedItemJSON{
			FeedItem: web.FeedItem{
				ID:            "post:" + strconv.FormatInt(p.ID, 10),
				URL:           base + "/blog/" + p.Slug,
				Title:         p.Title,
				Summary:       postbus.Summarize(p.Excerpt, postbus.ExcerptMaxChars),
				DatePublished: isoTime(p.PublishedAt),
				Tags:          nonNil(p.Tags),
			},
			Post: feedPostJSON{Authors: authorsJSON(p.Authors), ReadingTime: p.ReadingTime},
		}
	}
	return web.SendCacheable(c, web.NewFeed("coworkjobs: latest blog posts", base+"/v2/vine/blog", base+"/blog", items),
		h.cfg.FeedMaxAge)
}
