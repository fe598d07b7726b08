package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

func syndication() web.Syndication {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	return web.Syndication{Title: "T & co", Description: "the latest", FeedURL: "https://x.example/v2/vine/jobs?format=rss",
		HomePageURL: "https://x.example/jobs", Updated: t0.Add(time.Hour),
		Items: []web.SyndicationItem{
			{ID: "https://x.example/jobs/1", URL: "https://x.example/jobs/a-1", Title: "A <b>", ContentHTML: "<p>Hi &amp; <em>you</em></p>",
				Summary: "Hi", Published: t0, Updated: t0.Add(time.Hour), Tags: []string{"x", "y"}, Author: "Ann"},
			{ID: "https://x.example/jobs/2", URL: "https://x.example/jobs/b-2", Title: "B\x01", ContentHTML: "<p>]]></p>", Published: t0},
		}}
}

// Each format parses with gofeed as that format and keeps every rule of
// it; the description's HTML comes back as it went in.
func TestSyndicationFormats(t *testing.T) {
	f := syndication()
	for _, format := range []string{web.FormatRSS, web.FormatAtom, web.FormatJSON} {
		t.Run(format, func(t *testing.T) {
			var body []byte
			var err error
			switch format {
			case web.FormatRSS:
				body, err = f.RSS()
			case web.FormatAtom:
				body, err = f.Atom()
			default:
				body, err = f.JSONFeed()
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := webtest.CheckFeed(format, body)
			if err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
			if len(got.Items) != 2 || got.Title != "T & co" || got.Items[0].Title != "A <b>" {
				t.Fatalf("%+v", got)
			}
			if c := got.Items[0].Content + got.Items[0].Description; !strings.Contains(c, "<p>Hi &amp; <em>you</em></p>") {
				t.Fatalf("content %q %q", got.Items[0].Content, got.Items[0].Description)
			}
			if p := got.Items[0].PublishedParsed; p == nil || !p.Equal(f.Items[0].Published) {
				t.Fatalf("published %v", p)
			}
			if format != web.FormatRSS && (got.Items[0].UpdatedParsed == nil || !got.Items[0].UpdatedParsed.Equal(f.Items[0].Updated)) {
				t.Fatalf("updated %v", got.Items[0].UpdatedParsed)
			}
		})
	}
	// An empty feed is valid too.
	empty := web.Syndication{Title: "E", Description: "none", FeedURL: "https://x.example/f", HomePageURL: "https://x.example/"}
	for _, format := range []string{web.FormatRSS, web.FormatAtom, web.FormatJSON} {
		b, _ := map[string]func() ([]byte, error){web.FormatRSS: empty.RSS, web.FormatAtom: empty.Atom, web.FormatJSON: empty.JSONFeed}[format]()
		if _, err := webtest.CheckFeed(format, b); err != nil {
			t.Fatalf("empty %s: %v\n%s", format, err, b)
		}
	}
}

// SendFeed answers the format's media type with ETag and Last-Modified, and
// 304 to either validator; If-None-Match wins over If-Modified-Since.
func TestSendFeedValidators(t *testing.T) {
	app := fiber.New()
	app.Get("/f", func(c *fiber.Ctx) error {
		q := web.Params(c)
		format := web.FeedFormat(q)
		if err := q.Err(); err != nil {
			_ = err
			return c.Status(422).SendString(strings.Join(q.Problems(), "; "))
		}
		return web.SendFeed(c, format, syndication(), 60)
	})
	get := func(target string, hdr ...string) *http.Response {
		req := httptest.NewRequest("GET", target, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for format, mime := range map[string]string{"rss": web.MIMERSS, "atom": web.MIMEAtom, "json": web.MIMEJSONFeed} {
		r := get("/f?format=" + format)
		etag, lm := r.Header.Get("ETag"), r.Header.Get("Last-Modified")
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != mime || etag == "" || lm != "Sun, 01 Mar 2026 11:00:00 GMT" {
			t.Fatalf("%s: %d %v", format, r.StatusCode, r.Header)
		}
		if r := get("/f?format="+format, "If-None-Match", etag); r.StatusCode != 304 {
			t.Fatalf("%s If-None-Match: %d", format, r.StatusCode)
		}
		if r := get("/f?format="+format, "If-Modified-Since", lm); r.StatusCode != 304 {
			t.Fatalf("%s If-Modified-Since: %d", format, r.StatusCode)
		}
		if r := get("/f?format="+format, "If-Modified-Since", "Sun, 01 Mar 2026 10:59:59 GMT"); r.StatusCode != 200 {
			t.Fatalf("%s older If-Modified-Since: %d", format, r.StatusCode)
		}
		if r := get("/f?format="+format, "If-None-Match", `W/"other"`, "If-Modified-Since", lm); r.StatusCode != 200 {
			t.Fatalf("%s other etag with a current date: %d", format, r.StatusCode)
		}
	}
	r := get("/f?format=xml")
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 422 || !strings.Contains(string(b), "format must be one of rss, atom, json") {
		t.Fatalf("%d %s", r.StatusCode, b)
	}
}
