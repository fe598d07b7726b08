package jobapp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// feedTitle names the jobs feed in every format.
const feedTitle = "coworkjobs: latest jobs"

// feedRef makes a feed item's page view and its Apply click count under the
// feed channel (job statistics); an item's id stays the bare address.
const feedRef = "?ref=" + statsbus.ChannelFeed

// feed answers GET /v2/vine/jobs: the latest active jobs matching the shared
// filters (q, tag, job_type, remote, city), in the vine/1 envelope or, with
// ?format=, as RSS 2.0, Atom 1.0 or JSON Feed 1.1; cacheable with an ETag
// (and Last-Modified in the standard formats).
func (h *handlers) feed(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", FeedDefault, 1, FeedMax)
	format := web.FeedFormat(q)
	var f jobbus.ListFilter
	for _, problem := range parseFilters(c, &f) {
		q.Add(problem)
	}
	if err := q.Err(); err != nil {
		return err
	}
	f.Limit = limit
	jobs, changed, err := h.bus.Feed(c.UserContext(), f)
	if err != nil {
		return err
	}
	base := h.bus.BaseURL()
	if format == web.FormatVine {
		err = web.SendCacheable(c, web.NewFeed(feedTitle, base+"/v2/vine/jobs", base+"/jobs", h.vineItems(jobs)), 60)
	} else {
		err = web.SendFeed(c, format, h.syndication(jobs, changed, feedQuery(format, limit, f, strings.TrimSpace(c.Query("q")))), 60)
	}
	if err == nil && c.Response().StatusCode() == http.StatusOK {
		// A fetch, not a revalidation (304): the reader got these jobs.
		seen := h.impressions(c, statsbus.ChannelFeed)
		for _, j := range jobs {
			seen(j.ID)
		}
	}
	return err
}

func (h *handlers) vineItems(jobs []jobbus.Job) []feedItemDTO {
	items := make([]feedItemDTO, 0, len(jobs))
	for _, j := range jobs {
		items = append(items, feedItemDTO{
			FeedItem: web.FeedItem{
				ID:      "job:" + strconv.FormatInt(j.ID, 10),
				URL:     h.bus.JobURL(jobbus.PageURL(j.Slug, j.ID)) + feedRef,
				Title:   j.Title,
				Summary: jobbus.Summary(j.Description, FeedSummaryLen),
				// What encoding/json writes for a time.Time.
				DatePublished: j.DateAdded.UTC().Format(time.RFC3339Nano),
				Tags:          tagList(j.Tags),
			},
			Job: feedJobDTO{Company: j.Company, CityName: j.CityName, JobType: j.JobType, IsRemote: j.IsRemote},
		})
	}
	return items
}

// syndication is the jobs feed in the standard formats' terms. An item's id
// is the job's address by id alone, which redirects to its page: it stays
// the same when an edited title moves the page's slug.
func (h *handlers) syndication(jobs []jobbus.Job, changed time.Time, query string) web.Syndication {
	base := h.bus.BaseURL()
	s := web.Syndication{Title: feedTitle, Description: "The latest active jobs on coworkjobs",
		FeedURL: base + "/v2/vine/jobs?" + query, HomePageURL: base + "/jobs", Updated: changed,
		Items: make([]web.SyndicationItem, len(jobs))}
	for i, j := range jobs {
		s.Items[i] = web.SyndicationItem{ID: base + "/jobs/" + strconv.FormatInt(j.ID, 10),
			URL: h.bus.JobURL(jobbus.PageURL(j.Slug, j.ID)) + feedRef, Title: j.Title + " at " + j.Company, ContentHTML: j.Description,
			Summary: jobbus.Summary(j.Description, FeedSummaryLen), Published: j.DateAdded, Updated: j.UpdatedAt,
			Tags: tagList(j.Tags), Author: j.Company}
	}
	return s
}

// feedQuery is the canonical query of a feed (its self link): what was
// asked, in a fixed order, never anything else the request carried.
func feedQuery(format string, limit int, f jobbus.ListFilter, search string) string {
	v := url.Values{"format": {format}}
	if limit != FeedDefault {
		v.Set("limit", strconv.Itoa(limit))
	}
	if f.CitySlug != "" {
		v.Set("city", f.CitySlug)
	}
	if f.JobType != "" {
		v.Set("job_type", f.JobType)
	}
	if f.Remote {
		v.Set("remote", "1")
	}
	if f.Tag != "" {
		v.Set("tag", f.Tag)
	}
	if !f.Search.Empty() {
		v.Set("q", search)
	}
	return v.Encode()
}

func tagList(tags string) []string {
	if tags == "" {
		return []string{}
	}
	return strings.Split(tags, ",")
}
