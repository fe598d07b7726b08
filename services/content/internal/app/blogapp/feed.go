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

const feedTitle = "coworkjobs: latest blog posts"

// feed answers GET /v2/vine/blog: the latest public posts in the shared feed
// shape or, with ?format=, as RSS 2.0, Atom 1.0 or JSON Feed 1.1; cacheable
// (ETag, 304, Cache-Control, and Last-Modified in the standard formats).
func (h *handlers) feed(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", FeedDefaultLimit, 1, FeedMaxLimit)
	format := web.FeedFormat(q)
	if err := q.Err(); err != nil {
		return err
	}
	base := h.cfg.PublicBaseURL
	if format != web.FormatVine {
		posts, changed, err := h.bus.Feed(c.UserContext(), limit)
		if err != nil {
			return err
		}
		s := web.Syndication{Title: feedTitle, Description: "The latest posts of the coworkjobs blog",
			FeedURL: base + "/v2/vine/blog?format=" + format, HomePageURL: base + "/blog", Updated: changed,
			Items: make([]web.SyndicationItem, len(posts))}
		if limit != FeedDefaultLimit {
			s.FeedURL += "&limit=" + strconv.Itoa(limit)
		}
		for i, p := range posts {
			it := web.SyndicationItem{ID: base + "/blog/" + p.Slug, URL: base + "/blog/" + p.Slug, Title: p.Title,
				ContentHTML: p.BodyHTML, Summary: postbus.Summarize(p.Excerpt, postbus.ExcerptMaxChars),
				Published: p.PublishedAt, Updated: p.UpdatedAt, Tags: p.Tags}
			if len(p.Authors) > 0 {
				it.Author = p.Authors[0].Name
			}
			s.Items[i] = it
		}
		return web.SendFeed(c, format, s, h.cfg.FeedMaxAge)
	}
	page, err := h.bus.List(c.UserContext(), postbus.Filter{Limit: limit})
	if err != nil {
		return err
	}
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
	return web.SendCacheable(c, web.NewFeed(feedTitle, base+"/v2/vine/blog", base+"/blog", items), h.cfg.FeedMaxAge)
}
