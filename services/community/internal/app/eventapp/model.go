package eventapp

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// Event is the HTTP shape of an event. Times are RFC 3339 in the event's own
// UTC offset; timezone names the IANA zone they belong to.
type Event struct {
	ID              int64    `json:"id"`
	Slug            string   `json:"slug"`
	Title           string   `json:"title"`
	Summary         string   `json:"summary"`
	Description     string   `json:"description"`
	StartsAt        string   `json:"starts_at"`
	EndsAt          string   `json:"ends_at"`
	Timezone        string   `json:"timezone"`
	Online          bool     `json:"online"`
	OnlineURL       *string  `json:"online_url"`
	VenueName       *string  `json:"venue_name"`
	VenueAddress    *string  `json:"venue_address"`
	CityName        *string  `json:"city_name"`
	CitySlug        *string  `json:"city_slug"`
	SpaceID         *int64   `json:"space_id"`
	SpaceName       *string  `json:"space_name"`
	URL             string   `json:"url"`
	RegistrationURL *string  `json:"registration_url"`
	IsFree          bool     `json:"is_free"`
	Tags            []string `json:"tags"`
	CreatedAt       string   `json:"created_at"`
	UpdatedAt       string   `json:"updated_at"`
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func eventURL(base, slug string) string { return strings.TrimRight(base, "/") + "/events/" + slug }

func toEvent(e eventbus.Event, base string) Event {
	loc := e.Location()
	out := Event{
		ID: e.ID, Slug: e.Slug, Title: e.Title, Summary: e.Summary, Description: e.Description,
		StartsAt: e.StartsAt.In(loc).Format(time.RFC3339), EndsAt: e.EndsAt.In(loc).Format(time.RFC3339),
		Timezone: e.Timezone, Online: e.Online, OnlineURL: opt(e.OnlineURL), VenueName: opt(e.VenueName),
		VenueAddress: opt(e.VenueAddress), CityName: opt(e.CityName), CitySlug: opt(e.CitySlug),
		SpaceName: opt(e.SpaceName), URL: eventURL(base, e.Slug), RegistrationURL: opt(e.RegistrationURL),
		IsFree: e.IsFree, Tags: e.Tags,
		CreatedAt: e.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: e.UpdatedAt.UTC().Format(time.RFC3339),
	}
	if e.SpaceID != 0 {
		id := e.SpaceID
		out.SpaceID = &id
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	return out
}

// List is the data of GET /v2/events.
type List struct {
	Events     []Event        `json:"events"`
	Pagination web.Pagination `json:"pagination"`
}

// Feed is the shared feed shape (web.Feed) of events.
type Feed = web.Feed[FeedItem]

// FeedItem is one feed entry with the _event extension.
type FeedItem struct {
	web.FeedItem
	Event FeedEvent `json:"_event"`
}

// FeedEvent is the _event extension.
type FeedEvent struct {
	StartsAt string  `json:"starts_at"`
	EndsAt   string  `json:"ends_at"`
	Timezone string  `json:"timezone"`
	Online   bool    `json:"online"`
	CityName *string `json:"city_name"`
}

// MaxSummaryChars bounds a feed item's summary.
const MaxSummaryChars = 280

func summarize(e eventbus.Event) string {
	s := e.Summary
	if s == "" {
		s = e.Description
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= MaxSummaryChars {
		return s
	}
	r := []rune(s)[:MaxSummaryChars-1]
	return strings.TrimRight(string(r), " ") + "…"
}

func toFeedItem(e eventbus.Event, base string) FeedItem {
	loc := e.Location()
	tags := e.Tags
	if tags == nil {
		tags = []string{}
	}
	return FeedItem{
		FeedItem: web.FeedItem{ID: "event:" + itoa(e.ID), URL: eventURL(base, e.Slug), Title: e.Title, Summary: summarize(e),
			DatePublished: e.CreatedAt.UTC().Format(time.RFC3339), Tags: tags},
		Event: FeedEvent{StartsAt: e.StartsAt.In(loc).Format(time.RFC3339), EndsAt: e.EndsAt.In(loc).Format(time.RFC3339),
			Timezone: e.Timezone, Online: e.Online, CityName: opt(e.CityName)},
	}
}
