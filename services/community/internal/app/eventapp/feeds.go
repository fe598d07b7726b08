package eventapp

import (
	"html"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// standardFeed answers GET /v2/vine/events?format= as RSS 2.0, Atom 1.0 or
// JSON Feed 1.1.
func (h handlers) standardFeed(c *fiber.Ctx, format string, limit int) error {
	events, changed, err := h.cfg.Events.Feed(c.UserContext(), limit)
	if err != nil {
		return err
	}
	base := strings.TrimRight(h.cfg.PublicBaseURL, "/")
	s := web.Syndication{Title: "coworkjobs: upcoming events", Description: "Upcoming events in coworking spaces",
		FeedURL: base + "/v2/vine/events?format=" + format, HomePageURL: base + "/events", Updated: changed,
		Items: make([]web.SyndicationItem, len(events))}
	if limit != DefaultFeed {
		s.FeedURL += "&limit=" + strconv.Itoa(limit)
	}
	for i, e := range events {
		u := eventURL(base, e.Slug)
		s.Items[i] = web.SyndicationItem{ID: u, URL: u, Title: e.Title, ContentHTML: eventHTML(e), Summary: summarize(e),
			Published: e.CreatedAt, Updated: e.UpdatedAt, Tags: e.Tags, Author: e.SpaceName}
	}
	return web.SendFeed(c, format, s, 60)
}

// eventHTML is an event's content: when and where, then its description,
// which is plain text (escaped here).
func eventHTML(e eventbus.Event) string {
	loc := e.Location()
	where := e.VenueName
	if e.CityName != "" {
		where = strings.TrimPrefix(where+", "+e.CityName, ", ")
	}
	if e.Online {
		where = strings.TrimPrefix(where+", online", ", ")
	}
	var b strings.Builder
	b.WriteString("<p>")
	b.WriteString(html.EscapeString(e.StartsAt.In(loc).Format("Mon 2 January 2006, 15:04") + " – " +
		e.EndsAt.In(loc).Format("Mon 2 January 2006, 15:04") + " (" + e.Timezone + ")"))
	if where != "" {
		b.WriteString("<br>" + html.EscapeString(where))
	}
	b.WriteString("</p>")
	for _, para := range strings.Split(e.Description, "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			b.WriteString("<p>" + html.EscapeString(para) + "</p>")
		}
	}
	return b.String()
}
