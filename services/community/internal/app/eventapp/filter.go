package eventapp

import (
	"regexp"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

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

// intParam parses an optional integer query parameter within [lo, hi].
func intParam(c *fiber.Ctx, name string, def, lo, hi int, problems *[]string) int {
	raw := c.Query(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		*problems = append(*problems, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}

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
	var problems []string
	if city := c.Query("city"); city != "" {
		if len(city) > 100 || !slugRe.MatchString(city) {
			problems = append(problems, "city must be a city slug (lowercase letters, digits and hyphens)")
		} else {
			f.CitySlug = city
		}
	}
	if raw := c.Query("space"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id < 1 {
			problems = append(problems, "space must be a positive integer space id")
		} else {
			f.SpaceID = id
		}
	}
	if raw := c.Query("from"); raw != "" {
		if t, ok := parseDate(raw, false); ok {
			f.From = &t
		} else {
			problems = append(problems, "from must be an ISO 8601 date (YYYY-MM-DD) or an RFC 3339 timestamp")
		}
	}
	if raw := c.Query("to"); raw != "" {
		if t, ok := parseDate(raw, true); ok {
			f.To = &t
		} else {
			problems = append(problems, "to must be an ISO 8601 date (YYYY-MM-DD) or an RFC 3339 timestamp")
		}
	}
	if f.From != nil && f.To != nil && !f.To.After(*f.From) {
		problems = append(problems, "to must not be before from")
	}
	p := eventbus.Page{
		Number: intParam(c, "page", 1, 1, MaxPage, &problems),
		Size:   intParam(c, "per_page", DefaultPerPage, 1, MaxPerPage, &problems),
	}
	return f, p, problems
}
