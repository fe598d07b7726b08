package feeds

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbound"
)

func readFixture(name string) ([]byte, error) { return os.ReadFile("testdata/" + name) }

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := readFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each public format, from a fixture written as its API documents it,
// comes out as positions in our terms.
func TestParseEachFormat(t *testing.T) {
	t.Parallel()
	d := Defaults{Company: "Hub Spaces", City: "Berlin", Tags: "coworking"}
	for _, tc := range []struct {
		kind, file, url string
		want            []map[string]any // checked fields of each position's body
		refs            []string
	}{
		{Greenhouse, "greenhouse.json", "", []map[string]any{
			{"title": "Community Manager", "job_type": "fulltime", "city_name": "Berlin", "tags": "community",
				"apply_url": "https://boards.greenhouse.io/hubspaces/jobs/4012345", "company": "Hub Spaces"},
			{"title": "Part-time Front Desk Host", "job_type": "parttime", "city_name": "Berlin", "workplace_type": "remote", "tags": "hospitality"},
		}, []string{"4012345", "4012346"}},
		{Lever, "lever.json", "", []map[string]any{
			{"title": "Space Operations Lead", "job_type": "fulltime", "city_name": "Lisbon", "workplace_type": "hybrid",
				"tags": "operations,community", "sal_min": int64(32000), "sal_max": int64(38000), "currency": "EUR", "salary_period": "year",
				"apply_url": "https://jobs.lever.co/deskhub/5ac21346-8e0c-4494-8e7a-3eb92ff77902/apply"},
			{"title": "Events Intern", "job_type": "internship", "city_name": "Porto", "workplace_type": "on_site", "tags": "events",
				"sal_min": int64(9), "sal_max": int64(11), "salary_period": "hour"},
		}, []string{"5ac21346-8e0c-4494-8e7a-3eb92ff77902", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}},
		{Ashby, "ashby.json", "", []map[string]any{
			{"title": "Barista & Community Host", "job_type": "parttime", "city_name": "Amsterdam", "workplace_type": "on_site", "tags": "hospitality,cafe"},
			{"title": "Remote Community Designer", "job_type": "freelance", "city_name": "Berlin", "workplace_type": "remote", "tags": "design"},
		}, []string{"7c3e1a52-6f0b-4f7e-9a55-0d4c1f2e3b4a", "99999999-8888-7777-6666-555555555555"}},
		{Personio, "personio.xml", "https://hive.jobs.personio.de/xml?language=en", []map[string]any{
			{"title": "Community Manager (m/w/d)", "job_type": "fulltime", "city_name": "Munich", "tags": "community,events",
				"apply_url": "https://hive.jobs.personio.de/job/1204567"},
			{"title": "Werkstudent Front Office", "job_type": "parttime", "city_name": "Hamburg", "tags": "hospitality"},
		}, []string{"1204567", "1204568"}},
		{JSON, "jobs.json", "", []map[string]any{
			{"title": "Night Host", "job_type": "parttime", "city_name": "Berlin", "company": "Hub Spaces"},
			{"title": "Remote Member Success", "is_remote": "1", "sal_min": "40000"},
		}, []string{"desk-1", "desk-2"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ps, err := Parse(tc.kind, tc.url, fixture(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(tc.want) {
				t.Fatalf("%d positions, want %d", len(ps), len(tc.want))
			}
			for i, p := range ps {
				if p.Ref != tc.refs[i] {
					t.Errorf("position %d: ref %q, want %q", i, p.Ref, tc.refs[i])
				}
				b := p.Body(d)
				if _, ok := b["external_ref"]; ok {
					t.Errorf("position %d: the body carries external_ref", i)
				}
				for k, v := range tc.want[i] {
					got := b[k]
					if s, ok := v.(string); ok {
						if g, ok := got.(interface{ String() string }); ok { // json.Number
							got = g.String()
						}
						if got != s {
							t.Errorf("position %d: %s = %v, want %v", i, k, got, v)
						}
						continue
					}
					if g, ok := got.(int64); !ok || g != v.(int64) {
						t.Errorf("position %d: %s = %v, want %v", i, k, got, v)
					}
				}
				if desc, _ := b["description"].(string); strings.TrimSpace(desc) == "" {
					t.Errorf("position %d: no description", i)
				}
			}
		})
	}
	// What each format's markup becomes.
	gh, _ := Parse(Greenhouse, "", fixture(t, "greenhouse.json"))
	if !strings.Contains(gh[0].Description, "<strong>Kreuzberg</strong>") {
		t.Errorf("Greenhouse content not unescaped: %q", gh[0].Description)
	}
	lv, _ := Parse(Lever, "", fixture(t, "lever.json"))
	if !strings.Contains(lv[0].Description, "<h3>What you will do</h3><ul><li>Open the space</li>") || !strings.Contains(lv[0].Description, "free desk") {
		t.Errorf("Lever lists or additional missing: %q", lv[0].Description)
	}
	pe, _ := Parse(Personio, "https://hive.jobs.personio.de/xml", fixture(t, "personio.xml"))
	if !strings.Contains(pe[0].Description, "<h2>Your tasks</h2><ul><li>Run the space</li>") {
		t.Errorf("Personio sections: %q", pe[0].Description)
	}
}

// A body that is not the kind's format, a position without an id or one
// listed twice is an error naming the kind, never a partial list.
func TestParseRefusesWhatIsNotTheFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, body string }{
		{Greenhouse, `[]`},
		{Greenhouse, `{"meta":{}}`},
		{Lever, `{"jobs":[]}`},
		{Ashby, `<html></html>`},
		{Personio, `{"jobs":[]}`},
		{Personio, `<other><position><id>1</id></position></other>`},
		{JSON, `{"jobs":[{"title":"no ref"}]}`},
		{Lever, `[{"id":"a","text":"x"},{"id":"a","text":"y"}]`},
		{Greenhouse, `{"jobs":[{"title":"no id"}]}`},
		{"workday", `{}`},
	} {
		if _, err := Parse(tc.kind, "", []byte(tc.body)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s %s: %v, want ErrFormat", tc.kind, tc.body, err)
		}
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, token, url, want string }{
		{Greenhouse, "hubspaces", "", "https://boards-api.greenhouse.io/v1/boards/hubspaces/jobs?content=true"},
		{Lever, "deskhub", "", "https://api.lever.co/v0/postings/deskhub?mode=json"},
		{Ashby, "floor space", "", "https://api.ashbyhq.com/posting-api/job-board/floor%20space?includeCompensation=true"},
		{Personio, "hive", "", "https://hive.jobs.personio.de/xml?language=en"},
		{JSON, "", "https://platform.example/jobs.json", "https://platform.example/jobs.json"},
	} {
		if got, err := Endpoint(tc.kind, tc.token, tc.url); err != nil || got != tc.want {
			t.Errorf("%s %q: %q %v", tc.kind, tc.token, got, err)
		}
	}
	for _, tc := range []struct{ kind, token string }{{JSON, "x"}, {Personio, "evil.example/x"}} {
		if _, err := Endpoint(tc.kind, tc.token, ""); err == nil {
			t.Errorf("%s %q: no error", tc.kind, tc.token)
		}
	}
}

// A source is polled with the validators it gave last: an unchanged one
// answers 304 and is NotModified; a new ETag is kept; a feed past the
// limit is an error, not a truncated list; a private address is refused
// unless allowlisted.
func TestFetchIsConditional(t *testing.T) {
	t.Parallel()
	var hits, conditional atomic.Int32
	etag := `"v1"`
	modified := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/big" {
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
			return
		}
		if r.Header.Get("If-None-Match") == etag || r.Header.Get("If-Modified-Since") == modified {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified)
		_, _ = w.Write(fixture(t, "greenhouse.json"))
	}))
	defer srv.Close()
	allow, _ := outbound.ParseAllow("loopback")
	c := outbound.New(outbound.Config{Allow: allow, Timeout: 5 * time.Second, MaxRead: MaxFeed})
	ctx := context.Background()
	first, err := Fetch(ctx, c, srv.URL+"/jobs", Validators{})
	if err != nil || first.NotModified || first.Validators.ETag != etag || first.Validators.LastModified != modified {
		t.Fatalf("first: %+v %v", first.Validators, err)
	}
	if ps, err := Parse(Greenhouse, "", first.Body); err != nil || len(ps) != 2 {
		t.Fatalf("parse: %d %v", len(ps), err)
	}
	again, err := Fetch(ctx, c, srv.URL+"/jobs", first.Validators)
	if err != nil || !again.NotModified || again.Validators != first.Validators || len(again.Body) != 0 {
		t.Fatalf("again: %+v %v", again, err)
	}
	if conditional.Load() != 1 {
		t.Fatalf("%d conditional answers", conditional.Load())
	}
	small := outbound.New(outbound.Config{Allow: allow, Timeout: 5 * time.Second, MaxRead: 1024})
	if _, err := Fetch(ctx, small, srv.URL+"/big", Validators{}); !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("big: %v", err)
	}
	before := hits.Load()
	if _, err := Fetch(ctx, outbound.New(outbound.Config{Timeout: time.Second}), srv.URL+"/jobs", Validators{}); !errors.Is(err, ErrFetch) ||
		!strings.Contains(err.Error(), "not allowed") {
		t.Fatalf("private: %v", err)
	}
	if hits.Load() != before {
		t.Fatal("a private address was reached")
	}
}
