package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/eventapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
)

// The fixture: 5 upcoming and 2 past events over spaces 1 and 2, Berlin and
// Lisbon, one online.
var day = time.Now().UTC().Truncate(24 * time.Hour)

func seedEvents(ctx context.Context) error {
	bus := eventbus.New(eventdb.New(pool))
	berlin := func(e eventbus.Event) eventbus.Event {
		e.CityName, e.CitySlug, e.Timezone, e.VenueName = "Berlin", "berlin", "Europe/Berlin", "Factory Berlin"
		e.SpaceID, e.SpaceName = 1, "Factory Berlin"
		return e
	}
	lisbon := func(e eventbus.Event) eventbus.Event {
		e.CityName, e.CitySlug, e.Timezone, e.VenueName = "Lisbon", "lisbon", "Europe/Lisbon", "Second Home"
		e.SpaceID, e.SpaceName = 2, "Second Home Lisboa"
		return e
	}
	at := func(days, hour int) time.Time { return day.AddDate(0, 0, days).Add(time.Duration(hour) * time.Hour) }
	events := []eventbus.Event{
		berlin(eventbus.Event{Slug: "berlin-past", Title: "Berlin past", StartsAt: at(-10, 17), EndsAt: at(-10, 19)}),
		lisbon(eventbus.Event{Slug: "lisbon-past", Title: "Lisbon past", StartsAt: at(-3, 17), EndsAt: at(-3, 19)}),
		berlin(eventbus.Event{Slug: "berlin-1", Title: "Berlin one", StartsAt: at(2, 17), EndsAt: at(2, 19), Tags: []string{"networking"}}),
		berlin(eventbus.Event{Slug: "berlin-2", Title: "Berlin two", StartsAt: at(9, 8), EndsAt: at(9, 12)}),
		lisbon(eventbus.Event{Slug: "lisbon-1", Title: "Lisbon one", StartsAt: at(4, 18), EndsAt: at(4, 20)}),
		lisbon(eventbus.Event{Slug: "lisbon-2", Title: "Lisbon two", StartsAt: at(20, 18), EndsAt: at(20, 20)}),
		{Slug: "online-1", Title: "Online one", Summary: "A webinar", StartsAt: at(6, 15), EndsAt: at(6, 16),
			Timezone: "UTC", Online: true, OnlineURL: "https://meet.example/x"},
	}
	for _, e := range events {
		if _, err := bus.Save(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

func slugs(t *testing.T, r response) ([]string, web.Pagination) {
	t.Helper()
	var l eventapp.List
	r.Env.Into(t, &l)
	out := []string{}
	for _, e := range l.Events {
		out = append(out, e.Slug)
	}
	return out, l.Pagination
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	reader := &identity.Identity{Kind: identity.KindLive, KeyID: 1, Scopes: []string{"events:read"}}
	from := day.AddDate(0, 0, -30).Format(time.DateOnly)
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"list200UpcomingByDefault", "", []string{"berlin-1", "lisbon-1", "online-1", "berlin-2", "lisbon-2"}},
		{"list200City", "?city=berlin", []string{"berlin-1", "berlin-2"}},
		{"list200Space", "?space=2", []string{"lisbon-1", "lisbon-2"}},
		{"list200FromIncludesPast", "?from=" + from + "&city=berlin", []string{"berlin-past", "berlin-1", "berlin-2"}},
		{"list200ToIsInclusiveDay", "?to=" + day.AddDate(0, 0, 4).Format(time.DateOnly), []string{"berlin-1", "lisbon-1"}},
		{"list200Range", "?from=" + day.AddDate(0, 0, 3).Format(time.DateOnly) + "&to=" + day.AddDate(0, 0, 9).Format(time.DateOnly),
			[]string{"lisbon-1", "online-1", "berlin-2"}},
		{"list200UnknownCityEmpty", "?city=porto", []string{}},
		{"list200Page2", "?per_page=2&page=2", []string{"online-1", "berlin-2"}},
		{"list200PageBeyondEnd", "?per_page=2&page=9", []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, req{method: "GET", path: "/v2/events" + tc.query, id: reader})
			if r.Status != http.StatusOK {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			got, _ := slugs(t, r)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEventsShapeAndPagination(t *testing.T) {
	t.Parallel()
	r := do(t, req{method: "GET", path: "/v2/events?per_page=2&page=2", id: &identity.Identity{Kind: identity.KindRestricted, Scopes: []string{"read"}}})
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var l eventapp.List
	r.Env.Into(t, &l)
	want := web.Pagination{Total: 5, Limit: 2, Offset: 2, CurrentCount: 2, TotalPages: 3, CurrentPage: 2, HasNext: true, HasPrevious: true}
	if l.Pagination != want {
		t.Fatalf("pagination %+v, want %+v", l.Pagination, want)
	}
	// berlin-1 carries its zone's offset and venue facts.
	r = do(t, req{method: "GET", path: "/v2/events?city=berlin&per_page=1", id: &identity.Identity{Kind: identity.KindLive}})
	r.Env.Into(t, &l)
	e := l.Events[0]
	start, err := time.Parse(time.RFC3339, e.StartsAt)
	if err != nil {
		t.Fatal(err)
	}
	_, off := start.Zone()
	_, wantOff := day.In(mustLoc(t, "Europe/Berlin")).AddDate(0, 0, 2).Zone()
	if off != wantOff || e.Timezone != "Europe/Berlin" || e.Online || *e.VenueName != "Factory Berlin" ||
		*e.SpaceID != 1 || e.URL != baseURL+"/events/berlin-1" || e.OnlineURL != nil || len(e.Tags) != 1 {
		t.Fatalf("unexpected event %+v", e)
	}
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestEventsSpaceScoping(t *testing.T) {
	t.Parallel()
	space1 := &identity.Identity{Kind: identity.KindLive, KeyID: 7, SpaceID: 1, Scopes: []string{"read"}}
	t.Run("list200ScopedSeesOwnSpaceOnly", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events", id: space1})
		got, p := slugs(t, r)
		if fmt.Sprint(got) != "[berlin-1 berlin-2]" || p.Total != 2 {
			t.Fatalf("got %v total %d", got, p.Total)
		}
	})
	t.Run("list200ScopedOwnSpaceFilter", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?space=1", id: space1})
		if got, _ := slugs(t, r); fmt.Sprint(got) != "[berlin-1 berlin-2]" {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("list200ScopedCityOfOtherSpaceEmpty", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?city=lisbon", id: space1})
		if got, _ := slugs(t, r); len(got) != 0 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("list403ScopedOtherSpace", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?space=2", id: space1})
		if r.Status != http.StatusForbidden || r.Env.Error.Code != "forbidden" {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestEventsErrors(t *testing.T) {
	t.Parallel()
	reader := &identity.Identity{Kind: identity.KindLive}
	t.Run("list422EveryProblem", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?city=Bad%20City&space=x&from=yesterday&to=2026-13-01&page=0&per_page=51", id: reader})
		if r.Status != http.StatusUnprocessableEntity || r.Env.Error.Code != "validation_error" {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		d := r.Env.Problems(t)
		for _, want := range []string{"city", "space", "from", "to", "page", "per_page"} {
			if !contains(d, want+" must") {
				t.Errorf("no problem about %s in %v", want, d)
			}
		}
	})
	t.Run("list422ToBeforeFrom", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?from=2026-05-10&to=2026-05-01", id: reader})
		if r.Status != http.StatusUnprocessableEntity || !contains(r.Env.Problems(t), "to must not be before from") {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("list422NegativeSpace", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events?space=-1", id: reader})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("list401WithoutIdentity", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/events"})
		if r.Status != http.StatusUnauthorized || r.Env.Error.Code != "unauthorized" {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("list405Post", func(t *testing.T) {
		r := do(t, req{method: "POST", path: "/v2/events", id: reader})
		if r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
}

func TestEventsFeed(t *testing.T) {
	t.Parallel()
	t.Run("feed200Shape", func(t *testing.T) {
		r := do(t, req{method: "GET", path: "/v2/vine/events?limit=3", id: &public})
		if r.Status != http.StatusOK {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var f eventapp.Feed
		r.Env.Into(t, &f)
		if f.Version != "vine/1" || f.FeedURL != baseURL+"/v2/vine/events" || len(f.Items) != 3 {
			t.Fatalf("feed %+v", f)
		}
		it := f.Items[0]
		if it.ID == "" || it.URL != baseURL+"/events/berlin-1" || it.Event.Timezone != "Europe/Berlin" ||
			it.Event.CityName == nil || *it.Event.CityName != "Berlin" || it.DatePublished == "" {
			t.Fatalf("item %+v", it)
		}
		if f.Items[2].Event.Online != true || f.Items[2].Summary != "A webinar" {
			t.Fatalf("item %+v", f.Items[2])
		}
		if r.Header.Get("ETag") == "" || r.Header.Get("Cache-Control") != "public, max-age=60" {
			t.Fatalf("headers %v", r.Header)
		}
		r2 := do(t, req{method: "GET", path: "/v2/vine/events?limit=3", id: &public,
			header: map[string]string{"If-None-Match": r.Header.Get("ETag")}})
		if r2.Status != http.StatusNotModified || len(r2.Body) != 0 {
			t.Fatalf("status %d: %s", r2.Status, r2.Body)
		}
	})
	t.Run("feed200StandardFormats", func(t *testing.T) {
		for _, format := range []string{"rss", "atom", "json"} {
			r := do(t, req{method: "GET", path: "/v2/vine/events?limit=3&format=" + format, id: &public})
			if r.Status != http.StatusOK || r.Header.Get("Last-Modified") == "" || r.Header.Get("ETag") == "" {
				t.Fatalf("%s: %d %v", format, r.Status, r.Header)
			}
			f, err := webtest.CheckFeed(format, r.Body)
			if err != nil {
				t.Fatalf("%s: %v\n%s", format, err, r.Body)
			}
			if len(f.Items) != 3 || f.Items[0].Link != baseURL+"/events/berlin-1" ||
				!strings.Contains(f.Items[0].Content+f.Items[0].Description, "Berlin") {
				t.Fatalf("%s: items %s", format, r.Body)
			}
			for _, h := range [][2]string{{"If-None-Match", r.Header.Get("ETag")}, {"If-Modified-Since", r.Header.Get("Last-Modified")}} {
				r2 := do(t, req{method: "GET", path: "/v2/vine/events?limit=3&format=" + format, id: &public, header: map[string]string{h[0]: h[1]}})
				if r2.Status != http.StatusNotModified {
					t.Fatalf("%s %s: %d", format, h[0], r2.Status)
				}
			}
		}
		if r := do(t, req{method: "GET", path: "/v2/vine/events?format=yaml", id: &public}); r.Status != 422 ||
			!contains(r.Env.Problems(t), "format must be one of rss, atom, json") {
			t.Fatalf("format=yaml: %d %s", r.Status, r.Body)
		}
	})
	t.Run("feed422Limit", func(t *testing.T) {
		for _, q := range []string{"0", "51", "ten"} {
			r := do(t, req{method: "GET", path: "/v2/vine/events?limit=" + q, id: &public})
			if r.Status != http.StatusUnprocessableEntity || !contains(r.Env.Problems(t), "limit must be") {
				t.Fatalf("limit=%s: status %d: %s", q, r.Status, r.Body)
			}
		}
	})
}
