package e2e

import (
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// get is a public GET of an answer that is not the envelope (a feed, a
// sitemap, a script), checked against the OpenAPI document.
func get(t *testing.T, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, "GET", s.gateway+path, nil, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := checker.Check(req, res.StatusCode, res.Header, b); err != nil {
		t.Errorf("contract: %v", err)
	}
	return res, b
}

// The reach through the gateway, on the demo data: robots.txt names the
// sitemap, whose parts list job pages (304 when unchanged); the feeds in the
// standard formats, the aggregators' feeds and a demo space's embed answer.
func TestReachThroughGateway(t *testing.T) {
	r, b := get(t, "/robots.txt")
	if r.StatusCode != 200 || !strings.Contains(string(b), "/sitemap.xml\n") {
		t.Fatalf("robots.txt: %d %s", r.StatusCode, b)
	}
	r, b = get(t, "/sitemap.xml")
	var idx struct {
		Sitemaps []struct {
			Loc string `xml:"loc"`
		} `xml:"sitemap"`
	}
	if err := xml.Unmarshal(b, &idx); r.StatusCode != 200 || err != nil || len(idx.Sitemaps) == 0 {
		t.Fatalf("sitemap index: %d %v %s", r.StatusCode, err, b)
	}
	u, err := url.Parse(idx.Sitemaps[0].Loc)
	if err != nil {
		t.Fatal(err)
	}
	r, b = get(t, u.RequestURI())
	var set struct {
		URLs []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
	}
	if err := xml.Unmarshal(b, &set); r.StatusCode != 200 || err != nil || len(set.URLs) == 0 || !strings.Contains(set.URLs[0].Loc, "/jobs/") {
		t.Fatalf("sitemap part: %d %v %.300s", r.StatusCode, err, b)
	}
	if again, _ := get(t, u.RequestURI(), "If-None-Match", r.Header.Get("ETag")); again.StatusCode != 304 {
		t.Fatalf("sitemap part again: %d", again.StatusCode)
	}
	for _, format := range []string{"rss", "atom", "json"} {
		r, b := get(t, "/v2/vine/jobs?format="+format)
		if f, err := webtest.CheckFeed(format, b); r.StatusCode != 200 || err != nil || len(f.Items) == 0 {
			t.Fatalf("%s feed: %d %v %.300s", format, r.StatusCode, err, b)
		}
	}
	for _, format := range []string{"indeed", "jooble"} {
		if r, b := get(t, "/feeds/jobs.xml?format="+format); r.StatusCode != 200 || !strings.Contains(string(b), "<job") {
			t.Fatalf("%s: %d %.300s", format, r.StatusCode, b)
		}
	}
	r, b = get(t, "/embed/jobs.js?space=spreeufer-coworking-berlin")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") ||
		r.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" || !strings.Contains(string(b), `"jobs":[{`) {
		t.Fatalf("embed: %d %v %.300s", r.StatusCode, r.Header, b)
	}
}
