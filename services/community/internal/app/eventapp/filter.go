package eventapp

import (
	"regexp"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// Page size limits of GET /v2/events (those of the spec's jobs pagination).
const (
	DefaultPerPage = 20
	MaxPerPage     = 50
	MaxPage        = 10000
	DefaultFeed    = 20
	MaxFeed        = 50
)

var slugRe = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// parseDate reads an ISO 8601 date (YYYY-MM-DD, a UTC day) or an RFC 3339
// timestamp. endOfDay moves a plain date to the start of the next day, so a
// `to` date includes its whole day.
func parseDate(raw string, endOfDay bool) (time.Time, bool) {
	if d, err := time.Parse(time.DateOnly, raw); err == nil {
		if endOfDay {
			d = d.AddDate(0, 0, 1)
		}
		return d, true
	}
	if t, err := time.Parse(time.RFC3339, raw); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// parseFilter reads the query of GET /v2/events and returns every problem.
func parseFilter(c *fiber.Ctx) (eventbus.Filter, eventbus.Page, []string) {
	var f eventbus.Filter
	q := web.Params(c)
	if city, _ := q.Raw("city"); city != "" {
		if len(city) > 100 || !slugRe.MatchString(city) {
			q.Add("city must be a city slug (lowercase letters, digits and hyphens)")
		} else {
			f.CitySlug = city
		}
	}
	if raw, _ := q.Raw("space"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id < 1 {
			q.Add("space must be a positive integer space id")
		} else {
			f.SpaceID = id
		}
	}
	if raw, _ := q.Raw("from"); raw != "" {
		if t, ok := parseDate(raw, false); ok {
			f.From = &t
		} else {
			q.Add("from must be an ISO 8601 date (YYYY-MM-DD) or an RFC 3339 timestamp")
		}
	}
	if raw, _ := q.Raw("to"); raw != "" {
		if t, ok := parseDate(raw, true); ok {
			f.To = &t
		} else {
			q.Add("to must be an ISO 8601 date (YYYY-MM-DD) or an RFC 3339 timestamp")
		}
	}
	if f.From != nil && f.To != nil && !f.To.After(*f.From) {
		q.Add("to must not be before from")
	}
	p := eventbus.Page{
		Number: q.Int("page", 1, 1, MaxPage),
		Size:   q.Int("per_page", DefaultPerPage, 1, MaxPerPage),
	}
	return f, p, q.Problems()
}
