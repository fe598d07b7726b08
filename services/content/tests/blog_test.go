package tests

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

type author struct {
	Name     string `json:"name"`
	Username string `json:"username"`
}

type post struct {
	Title       string   `json:"title"`
	SlugURL     string   `json:"slug_url"`
	Categories  []string `json:"categories"`
	Tags        []string `json:"tags"`
	Date        string   `json:"date"`
	Authors     []author `json:"authors"`
	ReadingTime int      `json:"reading_time"`
	Excerpt     string   `json:"excerpt"`
	UpdatedAt   string   `json:"updated_at"`
	HTML        *string  `json:"html"`
}

type list struct {
	Posts      []post         `json:"posts"`
	Total      int            `json:"total"`
	Limit      int            `json:"limit"`
	Offset     int            `json:"offset"`
	Pagination web.Pagination `json:"pagination"`
}

func slugs(ps []post) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.SlugURL
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		query  string
		slugs  []string
		total  int
		limit  int
		offset int
		page   web.Pagination
	}{
		{name: "list200NewestFirstPublishedOnly", query: "",
			slugs: []string{"alpha", "bravo", "delta", "charlie", "unsafe"}, total: 5, limit: 10,
			page: web.Pagination{Total: 5, Limit: 10, CurrentCount: 5, TotalPages: 1, CurrentPage: 1}},
		{name: "list200LimitOffset", query: "?limit=2&offset=1",
			slugs: []string{"bravo", "delta"}, total: 5, limit: 2, offset: 1,
			page: web.Pagination{Total: 5, Limit: 2, Offset: 1, CurrentCount: 2, TotalPages: 3, CurrentPage: 1, HasNext: true, HasPrevious: true}},
		{name: "list200LastPage", query: "?limit=2&offset=4",
			slugs: []string{"unsafe"}, total: 5, limit: 2, offset: 4,
			page: web.Pagination{Total: 5, Limit: 2, Offset: 4, CurrentCount: 1, TotalPages: 3, CurrentPage: 3, HasPrevious: true}},
		{name: "list200OffsetPastEnd", query: "?offset=40",
			slugs: []string{}, total: 5, limit: 10, offset: 40,
			page: web.Pagination{Total: 5, Limit: 10, Offset: 40, TotalPages: 1, CurrentPage: 5, HasPrevious: true}},
		{name: "list200MaxLimit", query: "?limit=50&offset=0",
			slugs: []string{"alpha", "bravo", "delta", "charlie", "unsafe"}, total: 5, limit: 50,
			page: web.Pagination{Total: 5, Limit: 50, CurrentCount: 5, TotalPages: 1, CurrentPage: 1}},
		{name: "list200CategoryBySlug", query: "?category=careers",
			slugs: []string{"alpha", "charlie"}, total: 2, limit: 10,
			page: web.Pagination{Total: 2, Limit: 10, CurrentCount: 2, TotalPages: 1, CurrentPage: 1}},
		{name: "list200CategoryByName", query: "?category=COMMUNITY",
			slugs: []string{"bravo", "charlie"}, total: 2, limit: 10,
			page: web.Pagination{Total: 2, Limit: 10, CurrentCount: 2, TotalPages: 1, CurrentPage: 1}},
		{name: "list200Tag", query: "?tag=hiring",
			slugs: []string{"alpha", "delta"}, total: 2, limit: 10,
			page: web.Pagination{Total: 2, Limit: 10, CurrentCount: 2, TotalPages: 1, CurrentPage: 1}},
		{name: "list200TagPaged", query: "?tag=events&limit=1&offset=1",
			slugs: []string{"bravo"}, total: 2, limit: 1, offset: 1,
			page: web.Pagination{Total: 2, Limit: 1, Offset: 1, CurrentCount: 1, TotalPages: 2, CurrentPage: 2, HasPrevious: true}},
		{name: "list200CategoryAndTag", query: "?category=careers&tag=events",
			slugs: []string{"alpha"}, total: 1, limit: 10,
			page: web.Pagination{Total: 1, Limit: 10, CurrentCount: 1, TotalPages: 1, CurrentPage: 1}},
		{name: "list200UnknownCategoryEmpty", query: "?category=nope",
			slugs: []string{}, total: 0, limit: 10,
			page: web.Pagination{Limit: 10, CurrentPage: 1}},
		{name: "list200IgnoresApiKeyParameter", query: "?api_key=svc_live_x&limit=1",
			slugs: []string{"alpha"}, total: 5, limit: 1,
			page: web.Pagination{Total: 5, Limit: 1, CurrentCount: 1, TotalPages: 5, CurrentPage: 1, HasNext: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := get(t, "/v2/blog"+tc.query)
			if resp.Status != http.StatusOK || !resp.Env.Success || resp.Env.Status != 200 {
				t.Fatalf("status %d, envelope %s", resp.Status, resp.Body)
			}
			l := decode[list](t, resp.Env.Data)
			if got := slugs(l.Posts); !slices.Equal(got, tc.slugs) {
				t.Errorf("slugs = %v, want %v", got, tc.slugs)
			}
			if l.Total != tc.total || l.Limit != tc.limit || l.Offset != tc.offset {
				t.Errorf("total/limit/offset = %d/%d/%d, want %d/%d/%d", l.Total, l.Limit, l.Offset, tc.total, tc.limit, tc.offset)
			}
			if l.Pagination != tc.page {
				t.Errorf("pagination = %+v, want %+v", l.Pagination, tc.page)
			}
			for _, p := range l.Posts {
				if p.HTML != nil {
					t.Errorf("%s: the list form must not carry the body", p.SlugURL)
				}
			}
		})
	}
}

func TestListShape(t *testing.T) {
	t.Parallel()
	resp := get(t, "/v2/blog?limit=1")
	var raw struct {
		Posts []map[string]json.RawMessage `json:"posts"`
	}
	if err := json.Unmarshal(resp.Env.Data, &raw); err != nil || len(raw.Posts) != 1 {
		t.Fatalf("decode: %v %s", err, resp.Env.Data)
	}
	var keys []string
	for k := range raw.Posts[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"authors", "categories", "date", "excerpt", "reading_time", "slug_url", "tags", "title", "updated_at"}
	if !slices.Equal(keys, want) {
		t.Errorf("list item keys = %v, want %v", keys, want)
	}
	p := decode[list](t, resp.Env.Data).Posts[0]
	if p.Title != "Alpha" || p.SlugURL != "alpha" {
		t.Errorf("post = %+v", p)
	}
	if !slices.Equal(p.Categories, []string{"Careers"}) || !slices.Equal(p.Tags, []string{"Events", "Hiring"}) {
		t.Errorf("categories %v tags %v", p.Categories, p.Tags)
	}
	if want := []author{{"Mara Lindqvist", "mara"}, {"Jonas Becker", "jonas"}}; !reflect.DeepEqual(p.Authors, want) {
		t.Errorf("authors = %v, want %v (byline order)", p.Authors, want)
	}
	if d, err := time.Parse(time.RFC3339, p.Date); err != nil || !strings.HasSuffix(p.Date, "Z") || time.Since(d) < 0 {
		t.Errorf("date %q is not a past ISO 8601 UTC time: %v", p.Date, err)
	}
	if p.ReadingTime != 1 {
		t.Errorf("reading_time = %d, want 1 for 100 words", p.ReadingTime)
	}
	if !strings.HasPrefix(p.Excerpt, "word0 word1 ") || len([]rune(p.Excerpt)) > 280 {
		t.Errorf("excerpt %q: want a derived plain-text excerpt of at most 280 characters", p.Excerpt)
	}

	// A post without categories or tags still has arrays, never null.
	resp = get(t, "/v2/blog?tag=hiring&offset=1")
	var rawDelta struct {
		Posts []map[string]json.RawMessage `json:"posts"`
	}
	_ = json.Unmarshal(resp.Env.Data, &rawDelta)
	if len(rawDelta.Posts) != 1 || string(rawDelta.Posts[0]["categories"]) != "[]" {
		t.Errorf("delta categories = %s, want []", resp.Env.Data)
	}
}

func TestList422(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		query   string
		details []string
	}{
		{"list422LimitZero", "?limit=0", []string{"limit must be an integer between 1 and 50"}},
		{"list422LimitAboveMax", "?limit=51", []string{"limit must be an integer between 1 and 50"}},
		{"list422LimitNotInteger", "?limit=ten", []string{"limit must be an integer between 1 and 50"}},
		{"list422LimitEmpty", "?limit=", []string{"limit must be an integer between 1 and 50"}},
		{"list422OffsetNegative", "?offset=-1", []string{"offset must be an integer between 0 and 100000"}},
		{"list422OffsetFraction", "?offset=1.5", []string{"offset must be an integer between 0 and 100000"}},
		{"list422OffsetHuge", "?offset=99999999999999999999999", []string{"offset must be an integer between 0 and 100000"}},
		{"list422EveryProblem", "?limit=abc&offset=-3&category=",
			[]string{"category must not be empty when given", "limit must be an integer between 1 and 50", "offset must be an integer between 0 and 100000"}},
		{"list422Repeated", "?limit=1&limit=2", []string{"limit must be given at most once"}},
		{"list422TagTooLong", "?tag=" + strings.Repeat("x", 101), []string{"tag must be at most 100 characters"}},
		{"list422TagNotUTF8", "?tag=%ff%fe", []string{"tag must be valid UTF-8 text"}},
		{"list422CategoryNul", "?category=a%00b", []string{"category must not contain control characters"}},
		{"slug422Empty", "?slug=", []string{"slug must not be empty when given"}},
		{"slug422WithBadLimit", "?slug=alpha&limit=0", []string{"limit must be an integer between 1 and 50"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := get(t, "/v2/blog"+tc.query)
			if resp.Status != http.StatusUnprocessableEntity || resp.Env.Success || resp.Env.Error == nil || resp.Env.Error.Code != "validation_error" {
				t.Fatalf("status %d, envelope %s", resp.Status, resp.Body)
			}
			if !slices.Equal(resp.Env.Problems(t), tc.details) {
				t.Errorf("details = %q, want %q", resp.Env.Problems(t), tc.details)
			}
		})
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	resp := get(t, "/v2/blog?slug=alpha")
	if resp.Status != http.StatusOK {
		t.Fatalf("status %d %s", resp.Status, resp.Body)
	}
	p := decode[post](t, resp.Env.Data)
	if p.Title != "Alpha" || p.SlugURL != "alpha" || p.ReadingTime != 1 || len(p.Authors) != 2 ||
		!slices.Equal(p.Categories, []string{"Careers"}) || !slices.Equal(p.Tags, []string{"Events", "Hiring"}) {
		t.Errorf("post = %+v", p)
	}
	if p.HTML == nil || !strings.HasPrefix(*p.HTML, "<p>word0 word1") {
		t.Errorf("html = %v", p.HTML)
	}
	// The list's other parameters have no effect on a slug look-up.
	resp = get(t, "/v2/blog?slug=alpha&category=community&limit=1&offset=3")
	if resp.Status != http.StatusOK || decode[post](t, resp.Env.Data).SlugURL != "alpha" {
		t.Errorf("slug with list parameters: %d %s", resp.Status, resp.Env.Data)
	}
}

func TestSlug404(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, slug string }{
		{"slug404Unknown", "no-such-post"},
		{"slug404Draft", "draft-post"},
		{"slug404Scheduled", "future-post"},
		{"slug404Malformed", "Not%20A%20Slug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := get(t, "/v2/blog?slug="+tc.slug)
			if resp.Status != http.StatusNotFound || resp.Env.Error == nil || resp.Env.Error.Code != "not_found" || resp.Env.Success {
				t.Errorf("status %d envelope %s", resp.Status, resp.Body)
			}
		})
	}
}

func TestSlugSanitisedBody(t *testing.T) {
	t.Parallel()
	resp := get(t, "/v2/blog?slug=unsafe")
	if resp.Status != http.StatusOK {
		t.Fatalf("status %d", resp.Status)
	}
	p := decode[post](t, resp.Env.Data)
	if p.HTML == nil {
		t.Fatal("no html")
	}
	html := *p.HTML
	for _, bad := range []string{"<script", "alert", "<style", "display:none", "onclick", "onerror", "javascript:", "style=", "<iframe", "evil.example"} {
		if strings.Contains(html, bad) {
			t.Errorf("sanitised html still contains %q: %s", bad, html)
		}
	}
	for _, good := range []string{"<h2>Intro</h2>", "<p>word0 word1", `href="https://example.org/page"`, `rel="nofollow noopener"`, "good link", "bad link"} {
		if !strings.Contains(html, good) {
			t.Errorf("sanitised html lost %q: %s", good, html)
		}
	}
	// 500 visible words (499 + "Intro"; script, style and link texts aside,
	// "bad link good link" adds 4) at 230 a minute, rounded up: 3 minutes.
	if p.ReadingTime != 3 {
		t.Errorf("reading_time = %d, want 3", p.ReadingTime)
	}
	if p.Excerpt != "A hand-written excerpt." {
		t.Errorf("excerpt = %q", p.Excerpt)
	}
}

func TestIdentity401(t *testing.T) {
	t.Parallel()
	other, err := identityWithOtherSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		path   string
		header string
	}{
		{"blog401Missing", "/v2/blog", ""},
		{"blog401Forged", "/v2/blog", "e30.AAAA"},
		{"blog401OtherSecret", "/v2/blog?slug=alpha", other},
		{"feed401Missing", "/v2/vine/blog", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tc.header != "" {
				h[identity.Header] = tc.header
			}
			resp := do(t, http.MethodGet, tc.path, h)
			if resp.Status != http.StatusUnauthorized || resp.Env.Error == nil || resp.Env.Error.Code != "unauthorized" {
				t.Errorf("status %d envelope %s", resp.Status, resp.Body)
			}
		})
	}
}

func identityWithOtherSecret() (string, error) {
	c, err := identity.NewCodec(strings.Repeat("z", 40))
	if err != nil {
		return "", err
	}
	return c.Sign(identity.Identity{Kind: identity.KindPublic}, time.Minute)
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := map[string]string{identity.Header: publicIdentity(t)}
	resp := do(t, http.MethodPost, "/v2/blog", h)
	if resp.Status != http.StatusMethodNotAllowed || resp.Env.Error == nil || resp.Env.Error.Code != "method_not_allowed" {
		t.Errorf("POST /v2/blog: %d %s", resp.Status, resp.Body)
	}
	resp = do(t, http.MethodGet, "/v2/blog/alpha", h)
	if resp.Status != http.StatusNotFound || resp.Env.Error == nil || resp.Env.Error.Code != "not_found" {
		t.Errorf("GET /v2/blog/alpha: %d %s", resp.Status, resp.Body)
	}
}

func TestAnyCallerKindReadsTheBlog(t *testing.T) {
	t.Parallel()
	resp := svc.Do(t, webtest.Request{Method: http.MethodGet, Target: "/v2/blog",
		Identity: &identity.Identity{Kind: identity.KindRestricted, KeyID: 1, SpaceID: 5, Scopes: []string{"read"}}})
	if resp.Status != http.StatusOK || decode[list](t, resp.Env.Data).Total != 5 {
		t.Errorf("a space-scoped key sees the same public blog: %d %s", resp.Status, resp.Env.Data)
	}
}
