package tests

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// feedItem is a blog feed item: the fields every feed item has and the
// post's own.
type feedItem struct {
	web.FeedItem
	Post *struct {
		Authors     []author `json:"authors"`
		ReadingTime int      `json:"reading_time"`
	} `json:"_post"`
}

type feed = web.Feed[feedItem]

func TestFeed(t *testing.T) {
	t.Parallel()
	resp := get(t, "/v2/vine/blog")
	if resp.Status != http.StatusOK || !resp.Env.Success {
		t.Fatalf("status %d %s", resp.Status, resp.Body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "public, max-age=60" {
		t.Errorf("Cache-Control = %q", cc)
	}
	if et := resp.Header.Get("ETag"); !strings.HasPrefix(et, `W/"`) {
		t.Errorf("ETag = %q, want a weak tag", et)
	}
	f := decode[feed](t, resp.Env.Data)
	if f.Version != "vine/1" || f.FeedURL != baseURL+"/v2/vine/blog" || f.HomePageURL != baseURL+"/blog" || f.Title == "" {
		t.Errorf("feed header = %+v", f)
	}
	var got []string
	for _, it := range f.Items {
		got = append(got, strings.TrimPrefix(it.URL, baseURL+"/blog/"))
		if !strings.HasPrefix(it.ID, "post:") || it.Post == nil || it.Post.ReadingTime < 1 || len(it.Post.Authors) == 0 ||
			it.Tags == nil || len([]rune(it.Summary)) > 280 || it.DatePublished == "" {
			t.Errorf("item %+v", it)
		}
	}
	if want := []string{"alpha", "bravo", "delta", "charlie", "unsafe"}; !slices.Equal(got, want) {
		t.Errorf("feed posts = %v, want %v (published only, newest first)", got, want)
	}
	first := f.Items[0]
	if first.Title != "Alpha" || !reflect.DeepEqual(first.Tags, []string{"Events", "Hiring"}) ||
		!reflect.DeepEqual(first.Post.Authors, []author{{"Mara Lindqvist", "mara"}, {"Jonas Becker", "jonas"}}) {
		t.Errorf("first item = %+v", first)
	}
	// The item carries exactly the shared feed fields plus _post.
	var raw struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	_ = json.Unmarshal(resp.Env.Data, &raw)
	var keys []string
	for k := range raw.Items[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"_post", "date_published", "id", "summary", "tags", "title", "url"}; !slices.Equal(keys, want) {
		t.Errorf("item keys = %v, want %v", keys, want)
	}
}

func TestFeedLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		query  string
		status int
		items  int
	}{
		{"feed200Limit2", "?limit=2", 200, 2},
		{"feed200Limit50", "?limit=50", 200, 5},
		{"feed422LimitZero", "?limit=0", 422, 0},
		{"feed422LimitAboveMax", "?limit=51", 422, 0},
		{"feed422LimitNotInteger", "?limit=x", 422, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := get(t, "/v2/vine/blog"+tc.query)
			if resp.Status != tc.status {
				t.Fatalf("status %d, want %d", resp.Status, tc.status)
			}
			if tc.status == 422 {
				if resp.Env.Error == nil || resp.Env.Error.Code != "validation_error" ||
					!slices.Equal(resp.Env.Problems(t), []string{"limit must be an integer between 1 and 50"}) {
					t.Errorf("envelope %s", resp.Body)
				}
				return
			}
			if n := len(decode[feed](t, resp.Env.Data).Items); n != tc.items {
				t.Errorf("items = %d, want %d", n, tc.items)
			}
		})
	}
}

func TestFeedETag304(t *testing.T) {
	t.Parallel()
	resp := get(t, "/v2/vine/blog?limit=3")
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	h := map[string]string{identity.Header: publicIdentity(t), "If-None-Match": etag}
	resp = do(t, http.MethodGet, "/v2/vine/blog?limit=3", h)
	if resp.Status != http.StatusNotModified || len(resp.Body) != 0 || resp.Header.Get("ETag") != etag {
		t.Errorf("matching If-None-Match: status %d, body %q, ETag %q", resp.Status, resp.Body, resp.Header.Get("ETag"))
	}
	h["If-None-Match"] = `W/"something-else"`
	resp = do(t, http.MethodGet, "/v2/vine/blog?limit=3", h)
	if resp.Status != http.StatusOK {
		t.Errorf("stale If-None-Match: status %d, want 200", resp.Status)
	}
	// Another limit is another document with another tag.
	resp = get(t, "/v2/vine/blog?limit=2")
	if resp.Header.Get("ETag") == etag {
		t.Error("different feed contents share an ETag")
	}
}

// The standard formats parse with gofeed and keep their formats' rules; the
// items are the vine feed's posts with their sanitised bodies, and both
// validators answer 304.
func TestStandardFeeds(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"rss", "atom", "json"} {
		r := get(t, "/v2/vine/blog?format="+format)
		if r.Status != 200 || r.Header.Get("Last-Modified") == "" {
			t.Fatalf("%s: %d %v", format, r.Status, r.Header)
		}
		f, err := webtest.CheckFeed(format, r.Body)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, r.Body)
		}
		var got []string
		for _, it := range f.Items {
			got = append(got, strings.TrimPrefix(it.Link, baseURL+"/blog/"))
			if strings.Contains(it.Content+it.Description, "<script") {
				t.Fatalf("%s: unsanitised body %q", format, it.Content+it.Description)
			}
		}
		if want := []string{"alpha", "bravo", "delta", "charlie", "unsafe"}; !slices.Equal(got, want) {
			t.Errorf("%s: posts = %v, want %v", format, got, want)
		}
		for _, h := range [][2]string{{"If-None-Match", r.Header.Get("ETag")}, {"If-Modified-Since", r.Header.Get("Last-Modified")}} {
			again := svc.Do(t, webtest.Request{Method: http.MethodGet, Target: "/v2/vine/blog?format=" + format, Identity: &public,
				Header: map[string]string{h[0]: h[1]}})
			if again.Status != 304 {
				t.Errorf("%s %s: %d", format, h[0], again.Status)
			}
		}
	}
	if r := get(t, "/v2/vine/blog?format=xml"); r.Status != 422 {
		t.Fatalf("format=xml: %d %s", r.Status, r.Body)
	}
}
