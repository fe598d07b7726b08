package alertapp

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// FeedItems is how many jobs an alert's feed lists; FeedWindow how many of
// its newest matches are looked at to find them (the rest are old).
const (
	FeedItems  = 50
	FeedWindow = 500
)

// Feeds are an alert's feed URLs, one per format. Their token is of its own
// purpose: sharing a feed gives no right to manage the alert.
type Feeds struct {
	RSS  string `json:"rss"`
	Atom string `json:"atom"`
	JSON string `json:"json"`
}

// FeedURL is the alert's feed in format (rss, atom or json).
func FeedURL(base string, s *alertbus.Signer, a alertbus.Alert, format string) string {
	return base + "/v2/alerts/feed?format=" + format + "&token=" + url.QueryEscape(s.Token(alertbus.PurposeFeed, a))
}

func (h handlers) feeds(a alertbus.Alert) *Feeds {
	if h.jobs == nil {
		return nil
	}
	base := h.jobs.BaseURL()
	return &Feeds{RSS: FeedURL(base, h.bus.Signer, a, web.FormatRSS), Atom: FeedURL(base, h.bus.Signer, a, web.FormatAtom),
		JSON: FeedURL(base, h.bus.Signer, a, web.FormatJSON)}
}

// feed answers GET /v2/alerts/feed: the alert's matches still listed,
// newest first, in RSS 2.0 (the default), Atom 1.0 or JSON Feed 1.1. Nothing
// in it names the alert's address.
func (h handlers) feed(c *fiber.Ctx) error {
	q := web.Params(c)
	format := web.FeedFormat(q)
	if err := q.Err(); err != nil {
		return err
	}
	if format == web.FormatVine {
		format = web.FormatRSS
	}
	a, err := h.resolve(c, alertbus.PurposeFeed, nil)
	if err != nil {
		return err
	}
	ids, err := h.bus.Matches(c.UserContext(), a.ID, FeedWindow)
	if err != nil {
		return err
	}
	var jobs []jobbus.Job
	f := web.Syndication{}
	if len(ids) > 0 { // no ids would be no filter: every job
		if jobs, f.Updated, err = h.jobs.Feed(c.UserContext(), jobbus.ListFilter{JobIDs: ids, Limit: FeedItems}); err != nil {
			return err
		}
	}
	base := h.jobs.BaseURL()
	what := describe(a.Search)
	f.Title = "coworkjobs: jobs matching " + what
	f.Description = "The jobs still listed that matched the job alert " + what
	f.FeedURL = FeedURL(base, h.bus.Signer, a, format)
	f.HomePageURL = base + "/jobs"
	f.Items = make([]web.SyndicationItem, len(jobs))
	for i, j := range jobs {
		f.Items[i] = web.SyndicationItem{ID: base + "/jobs/" + strconv.FormatInt(j.ID, 10),
			URL: h.jobs.JobURL(jobbus.PageURL(j.Slug, j.ID)), Title: j.Title + " at " + j.Company, ContentHTML: j.Description,
			Summary: jobbus.Summary(j.Description, 300), Published: j.DateAdded, Updated: j.UpdatedAt,
			Tags: tagList(j.Tags), Author: j.Company}
	}
	// private: the URL is a capability, no shared cache should keep it.
	if err := web.SendFeed(c, format, f, 60); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "private, max-age=60")
	return nil
}

// describe is a search in words ("city=lisbon, q=barista").
func describe(search string) string {
	v, _ := url.ParseQuery(search)
	var parts []string
	for _, k := range alertbus.SearchParams {
		if s := v.Get(k); s != "" {
			parts = append(parts, k+"="+s)
		}
	}
	return strings.Join(parts, ", ")
}

func tagList(tags string) []string {
	if tags == "" {
		return []string{}
	}
	return strings.Split(tags, ",")
}
