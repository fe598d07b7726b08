package tests

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// TestStandardFeeds is not parallel: Last-Modified moves with any job's
// write, and the parallel tests write.
func TestStandardFeeds(t *testing.T) {
	key := liveKey(460, 1205)
	const city = 1460
	ids := seedCity(t, key, city, 3, func(i int, b map[string]any) {
		b["description"] = `<p>Welcome <strong>members</strong> &amp; guests <script>alert(1)</script></p>`
		if i == 0 { // ids[2]: seedCity lists the newest first
			b["tags"] = "Community, Barista"
			b["job_type"] = "parttime"
		}
	})
	// A paused job is in no feed.
	if r, _, _ := transition(t, key, "pause", ids[1]); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	public := identity.Identity{Kind: identity.KindPublic}
	for _, format := range []string{"rss", "atom", "json"} {
		t.Run(format, func(t *testing.T) {
			path := "/v2/vine/jobs?format=" + format + "&city=city-1460"
			r := do(t, appFlat, "GET", path, "", &public)
			wantType := map[string]string{"rss": "application/rss+xml", "atom": "application/atom+xml", "json": "application/feed+json"}[format]
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), wantType) || r.Header.Get("ETag") == "" {
				t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
			}
			lm, err := http.ParseTime(r.Header.Get("Last-Modified"))
			if err != nil || time.Since(lm) > time.Minute || time.Until(lm) > 0 {
				t.Fatalf("Last-Modified %q", r.Header.Get("Last-Modified"))
			}
			f, err := webtest.CheckFeed(format, r.Body)
			if err != nil {
				t.Fatalf("%v\n%s", err, r.Body)
			}
			if len(f.Items) != 2 {
				t.Fatalf("want the 2 active jobs, got %d: %s", len(f.Items), r.Body)
			}
			for i, it := range f.Items {
				want := []int64{ids[0], ids[2]}[i]
				page, ok := refPage(it.Link, "feed")
				if !ok || !strings.HasPrefix(page, baseURL+"/jobs/") || !strings.HasSuffix(page, "-"+itoa(want)) {
					t.Fatalf("item %d links to %s, want job %d", i, it.Link, want)
				}
				html := it.Content + it.Description
				if !strings.Contains(html, "<strong>members</strong>") || strings.Contains(html, "<script") {
					t.Fatalf("item content is not the sanitised HTML: %q", html)
				}
				if it.PublishedParsed == nil || time.Since(*it.PublishedParsed) > 48*time.Hour {
					t.Fatalf("published %v", it.PublishedParsed)
				}
			}
			if f.FeedLink != "" && !strings.HasPrefix(f.FeedLink, baseURL+"/v2/vine/jobs?") {
				t.Fatalf("self link %q", f.FeedLink)
			}
			if again := do(t, appFlat, "GET", path, "", &public, "If-None-Match", r.Header.Get("ETag")); again.Status != 304 {
				t.Fatalf("If-None-Match: %d", again.Status)
			}
			if again := do(t, appFlat, "GET", path, "", &public, "If-Modified-Since", r.Header.Get("Last-Modified")); again.Status != 304 {
				t.Fatalf("If-Modified-Since: %d", again.Status)
			}
			// The filters select as on GET /v2/jobs.
			r = do(t, appFlat, "GET", path+"&tag=barista&job_type=parttime", "", &public)
			if f, err := webtest.CheckFeed(format, r.Body); err != nil || len(f.Items) != 1 || !strings.HasSuffix(f.Items[0].Link, "-"+itoa(ids[2])+"?ref=feed") {
				t.Fatalf("tag and job_type: %v %s", err, r.Body)
			}
			r = do(t, appFlat, "GET", path+"&q="+url.QueryEscape("seeded 2"), "", &public)
			if f, err := webtest.CheckFeed(format, r.Body); err != nil || len(f.Items) == 0 {
				t.Fatalf("q: %v %s", err, r.Body)
			}
			r = do(t, appFlat, "GET", path+"&remote=1", "", &public)
			if f, err := webtest.CheckFeed(format, r.Body); err != nil || len(f.Items) != 0 {
				t.Fatalf("remote: %v %s", err, r.Body)
			}
		})
	}
	// Leaving the feed moves Last-Modified: a client holding the old date
	// gets the new feed, not a 304.
	r := do(t, appFlat, "GET", "/v2/vine/jobs?format=rss&city=city-1460", "", &public)
	time.Sleep(1100 * time.Millisecond) // HTTP dates count whole seconds
	if r, _, _ := transition(t, key, "close", ids[0]); r.Status != 200 {
		t.Fatalf("close: %d %s", r.Status, r.Body)
	}
	again := do(t, appFlat, "GET", "/v2/vine/jobs?format=rss&city=city-1460", "", &public, "If-Modified-Since", r.Header.Get("Last-Modified"))
	if f, err := webtest.CheckFeed("rss", again.Body); again.Status != 200 || err != nil || len(f.Items) != 1 {
		t.Fatalf("after close: %d %v %s", again.Status, err, again.Body)
	}
}

// Every bad parameter of a feed is a 422 naming it.
func TestStandardFeeds422(t *testing.T) {
	t.Parallel()
	public := identity.Identity{Kind: identity.KindPublic}
	for _, tc := range []struct{ query, detail string }{
		{"format=xml", "format must be one of rss, atom, json"},
		{"format=rss&city=Not%20A%20Slug", "city must be a city slug"},
		{"format=atom&job_type=gig", "job_type must be one of"},
		{"format=json&remote=maybe", "remote must be one of"},
		{"format=json&tag=a,b", "tag must be one tag"},
		{"format=rss&q=a", "q must contain at least 2 letters or digits"},
		{"q=" + strings.Repeat("x", 201), "q must be at most 200 characters"},
		{"format=rss&limit=0", "limit must be an integer between 1 and 50"},
		{"format=rss&format=atom", "format must be given at most once"},
	} {
		r := do(t, appFlat, "GET", "/v2/vine/jobs?"+tc.query, "", &public)
		if r.Status != 422 || !r.hasDetail(tc.detail) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
}
