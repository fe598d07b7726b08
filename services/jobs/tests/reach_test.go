package tests

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
)

var public = identity.Identity{Kind: identity.KindPublic}

// activePages are the public pages of every active job, by the database.
func activePages(t *testing.T, plans ...int) map[string]bool {
	t.Helper()
	q := `SELECT id, slug FROM jobs WHERE status = 'active' AND expiration_date > now()`
	args := []any{}
	if len(plans) > 0 {
		q += ` AND plan_id = ANY($1)`
		args = append(args, plans)
	}
	rows, err := pool.Query(bgContext, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id int64
		var slug string
		if err := rows.Scan(&id, &slug); err != nil {
			t.Fatal(err)
		}
		out[baseURL+"/jobs/"+slug+"-"+itoa(id)] = true
	}
	return out
}

type sitemapIndex struct {
	XMLName  xml.Name `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 sitemapindex"`
	Sitemaps []struct {
		Loc     string `xml:"loc"`
		LastMod string `xml:"lastmod"`
	} `xml:"sitemap"`
}

type urlSet struct {
	XMLName xml.Name `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
	URLs    []struct {
		Loc     string `xml:"loc"`
		LastMod string `xml:"lastmod"`
	} `xml:"url"`
}

// sitemapURLs reads the index and every part it names, holding each to the
// sitemap protocol (https://www.sitemaps.org/protocol.html: the namespace,
// absolute locations under the site, W3C dates, at most 50 000 URLs and
// 50 MB a part) and returns the pages listed.
func sitemapURLs(t *testing.T) []string {
	t.Helper()
	r := do(t, appReach, "GET", "/sitemap.xml", "", &public)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/xml") || r.Header.Get("ETag") == "" {
		t.Fatalf("index: %d %v %s", r.Status, r.Header, r.Body)
	}
	var idx sitemapIndex
	if err := xml.Unmarshal(r.Body, &idx); err != nil || len(idx.Sitemaps) == 0 {
		t.Fatalf("index: %v %s", err, r.Body)
	}
	var pages []string
	for _, s := range idx.Sitemaps {
		if _, err := time.Parse(time.RFC3339, s.LastMod); err != nil || !strings.HasPrefix(s.Loc, baseURL+"/sitemap.xml?part=") {
			t.Fatalf("index entry %+v", s)
		}
		u, _ := url.Parse(s.Loc)
		part := do(t, appReach, "GET", u.RequestURI(), "", &public)
		var set urlSet
		if err := xml.Unmarshal(part.Body, &set); part.Status != 200 || err != nil {
			t.Fatalf("%s: %d %v %s", s.Loc, part.Status, err, part.Body)
		}
		if len(set.URLs) > reachPartSize || len(set.URLs) > 50000 || len(part.Body) > 50<<20 {
			t.Fatalf("%s: %d URLs, %d bytes", s.Loc, len(set.URLs), len(part.Body))
		}
		for _, u := range set.URLs {
			if _, err := time.Parse(time.RFC3339, u.LastMod); err != nil || !strings.HasPrefix(u.Loc, baseURL+"/jobs/") {
				t.Fatalf("url %+v", u)
			}
			pages = append(pages, u.Loc)
		}
	}
	return pages
}

// checkListsActive fails unless pages are exactly the active jobs' pages,
// each once.
func checkListsActive(t *testing.T, what string, pages []string, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range pages {
		if !want[p] || seen[p] {
			t.Fatalf("%s lists %s, which is not an active job's page (or twice)", what, p)
		}
		seen[p] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("%s lists %d of the %d active jobs", what, len(seen), len(want))
	}
}

// TestSitemaps is not parallel: it compares the sitemap with every active
// job, which the parallel tests change.
func TestSitemaps(t *testing.T) {
	key := liveKey(470, 1206)
	ids := seedCity(t, key, 1470, 90, nil)
	for _, ev := range []struct {
		event string
		id    int64
	}{{"pause", ids[3]}, {"close", ids[4]}, {"unpublish", ids[5]}} {
		if r, _, _ := transition(t, key, ev.event, ev.id); r.Status != 200 {
			t.Fatalf("%s: %d %s", ev.event, r.Status, r.Body)
		}
	}
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET expiration_date = now() - interval '1 second' WHERE id = $1`, ids[6]); err != nil {
		t.Fatal(err)
	}
	checkListsActive(t, "the sitemap", sitemapURLs(t), activePages(t))

	r := do(t, appReach, "GET", "/sitemap.xml?part=1", "", &public)
	for _, h := range [][2]string{{"If-None-Match", r.Header.Get("ETag")}, {"If-Modified-Since", r.Header.Get("Last-Modified")}} {
		if again := do(t, appReach, "GET", "/sitemap.xml?part=1", "", &public, h[0], h[1]); again.Status != 304 || len(again.Body) != 0 {
			t.Fatalf("%s: %d", h[0], again.Status)
		}
	}
	// A job that stops being active leaves at once.
	time.Sleep(1100 * time.Millisecond) // HTTP dates count whole seconds
	if r, _, _ := transition(t, key, "close", ids[0]); r.Status != 200 {
		t.Fatal(r.Status)
	}
	if again := do(t, appReach, "GET", "/sitemap.xml?part=1", "", &public, "If-Modified-Since", r.Header.Get("Last-Modified")); again.Status != 200 {
		t.Fatalf("after a close: %d", again.Status)
	}
	checkListsActive(t, "the sitemap", sitemapURLs(t), activePages(t))

	for _, q := range []string{"part=0", "part=x", "part=1&part=2", "part=" + strconv.Itoa(1<<31)} {
		if r := do(t, appReach, "GET", "/sitemap.xml?"+q, "", &public); r.Status != 422 || !r.hasDetail("part") {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
	}
	// A part past every job is an empty, well-formed urlset.
	r = do(t, appReach, "GET", "/sitemap.xml?part=100000", "", &public)
	var set urlSet
	if err := xml.Unmarshal(r.Body, &set); r.Status != 200 || err != nil || len(set.URLs) != 0 {
		t.Fatalf("empty part: %d %v %s", r.Status, err, r.Body)
	}
}

// ---- the aggregators' formats ----

// aggregatorJob is one job of either format, as its validator reads it.
type aggregatorJob struct {
	ID, URL string
}

// The required elements of each format's job, from their published field
// lists (the fixtures' sources, testdata/aggregators).
var (
	indeedRequired = []string{"title", "date", "referencenumber", "requisitionid", "url", "company", "sourcename", "city", "country", "description"}
	joobleRequired = []string{"link", "name", "region", "description", "pubdate", "updated", "expire", "company"}
	joobleDate     = regexp.MustCompile(`^\d\d\.\d\d\.\d{4}$`)
)

type xmlField struct {
	XMLName xml.Name
	Value   string `xml:",chardata"`
}

// checkAggregator holds body to format's rules and returns its jobs.
// refPage splits a link to a job page carrying ?ref=<channel> (job
// statistics) into the page; ok when the ref is ref.
func refPage(link, ref string) (string, bool) {
	page, query, _ := strings.Cut(link, "?")
	return page, query == "ref="+ref
}

// aggregatorPages are the job pages an aggregator's feed links, each
// checked to carry the aggregator's ref.
func aggregatorPages(t *testing.T, format string, jobs []aggregatorJob) []string {
	t.Helper()
	var pages []string
	for _, j := range jobs {
		page, ok := refPage(j.URL, "aggregator%3A"+format)
		if !ok {
			t.Fatalf("%s link %q: not ?ref=aggregator%%3A%s", format, j.URL, format)
		}
		pages = append(pages, page)
	}
	return pages
}

func checkAggregator(format string, body []byte) ([]aggregatorJob, error) {
	var jobs []aggregatorJob
	var problems []string
	fields := func(fs []xmlField) map[string]string {
		m := map[string]string{}
		for _, f := range fs {
			if _, dup := m[f.XMLName.Local]; dup {
				problems = append(problems, "element "+f.XMLName.Local+" repeated")
			}
			m[f.XMLName.Local] = strings.TrimSpace(f.Value)
		}
		return m
	}
	absolute := func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.IsAbs() && u.Host != ""
	}
	seen := map[string]bool{}
	switch format {
	case reachapp.FormatIndeed:
		var doc struct {
			XMLName xml.Name `xml:"source"`
			Jobs    []struct {
				Fields []xmlField `xml:",any"`
			} `xml:"job"`
		}
		if err := xml.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		for _, j := range doc.Jobs {
			m := fields(j.Fields)
			for _, name := range indeedRequired {
				if m[name] == "" {
					problems = append(problems, "indeed job without "+name)
				}
			}
			if _, err := time.Parse(time.RFC3339, m["date"]); err != nil {
				problems = append(problems, "indeed date is not ISO 8601: "+m["date"])
			}
			if t := m["jobtype"]; t != "" && !slices.Contains([]string{"fulltime", "parttime", "contract", "internship", "temporary"}, t) {
				problems = append(problems, "indeed jobtype "+t)
			}
			if !absolute(m["url"]) || seen[m["referencenumber"]] {
				problems = append(problems, "indeed url not absolute or referencenumber repeated: "+m["referencenumber"])
			}
			seen[m["referencenumber"]] = true
			jobs = append(jobs, aggregatorJob{ID: m["referencenumber"], URL: m["url"]})
		}
	case reachapp.FormatJooble:
		var doc struct {
			XMLName xml.Name `xml:"jobs"`
			Jobs    []struct {
				ID     string     `xml:"id,attr"`
				Fields []xmlField `xml:",any"`
			} `xml:"job"`
		}
		if err := xml.Unmarshal(body, &doc); err != nil {
			return nil, err
		}
		for _, j := range doc.Jobs {
			m := fields(j.Fields)
			for _, name := range joobleRequired {
				if m[name] == "" {
					problems = append(problems, "jooble job without "+name)
				}
			}
			for _, name := range []string{"pubdate", "updated", "expire"} {
				if !joobleDate.MatchString(m[name]) {
					problems = append(problems, "jooble "+name+" is not DD.MM.YYYY: "+m[name])
				}
			}
			if j.ID == "" || seen[j.ID] || !absolute(m["link"]) {
				problems = append(problems, "jooble job id missing or repeated, or link not absolute: "+j.ID)
			}
			seen[j.ID] = true
			jobs = append(jobs, aggregatorJob{ID: j.ID, URL: m["link"]})
		}
	default:
		return nil, fmt.Errorf("format %q", format)
	}
	if len(problems) > 0 {
		return jobs, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return jobs, nil
}

// The validators accept the fixtures made from the formats' specifications.
func TestAggregatorFixtures(t *testing.T) {
	t.Parallel()
	for _, format := range []string{reachapp.FormatIndeed, reachapp.FormatJooble} {
		b, err := os.ReadFile("testdata/aggregators/" + format + ".xml")
		if err != nil {
			t.Fatal(err)
		}
		if jobs, err := checkAggregator(format, b); err != nil || len(jobs) != 1 {
			t.Fatalf("%s fixture: %v %v", format, jobs, err)
		}
	}
}

// TestAggregatorFeeds is not parallel (every active job, as TestSitemaps).
func TestAggregatorFeeds(t *testing.T) {
	key := liveKey(471, 1207)
	ids := seedCity(t, key, 1471, 6, func(i int, b map[string]any) {
		b["title"] = fmt.Sprintf("Tea ]]> host %d", i) // a CDATA end inside a value
		b["description"] = "<p>Tea &amp; cake for <em>members</em></p>"
		b["currency"], b["sal_min"], b["sal_max"] = "EUR", 30000, 40000
	})
	if r, _, _ := transition(t, key, "pause", ids[1]); r.Status != 200 {
		t.Fatal(r.Status)
	}
	// One job on another plan, for the operator's plan limit.
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET plan_id = 6 WHERE id = $1`, ids[2]); err != nil {
		t.Fatal(err)
	}
	paid := reachOn(newBus(baseURL, dirURL), reachapp.Config{AggregatorPlans: []int{6}})
	for _, format := range []string{reachapp.FormatIndeed, reachapp.FormatJooble} {
		r := do(t, appReach, "GET", "/feeds/jobs.xml?format="+format, "", &public)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/xml") || r.Header.Get("ETag") == "" {
			t.Fatalf("%s: %d %v", format, r.Status, r.Header)
		}
		jobs, err := checkAggregator(format, r.Body)
		if err != nil {
			t.Fatalf("%s: %v\n%.2000s", format, err, r.Body)
		}
		pages := aggregatorPages(t, format, jobs)
		checkListsActive(t, format, pages, activePages(t))
		if !strings.Contains(string(r.Body), "<![CDATA[<p>Tea &amp; cake for <em>members</em></p>]]>") ||
			!strings.Contains(string(r.Body), "<![CDATA[Tea ]]]]><![CDATA[> host 0]]>") ||
			!strings.Contains(string(r.Body), "EUR 30000 - 40000 per year") {
			t.Fatalf("%s: description or salary missing\n%.1500s", format, r.Body)
		}
		if again := do(t, appReach, "GET", "/feeds/jobs.xml?format="+format, "", &public, "If-None-Match", r.Header.Get("ETag")); again.Status != 304 {
			t.Fatalf("%s If-None-Match: %d", format, again.Status)
		}
		r = do(t, paid, "GET", "/feeds/jobs.xml?format="+format, "", &public)
		jobs, err = checkAggregator(format, r.Body)
		if err != nil {
			t.Fatalf("%s paid: %v", format, err)
		}
		pages = aggregatorPages(t, format, jobs)
		checkListsActive(t, format+" of plan 6", pages, activePages(t, 6))
	}
	for _, q := range []string{"", "format=rss", "format=indeed&format=jooble"} {
		if r := do(t, appReach, "GET", "/feeds/jobs.xml?"+q, "", &public); r.Status != 422 || !r.hasDetail("format") {
			t.Fatalf("%q: %d %s", q, r.Status, r.Body)
		}
	}
}

// The embed's bad requests are clear errors.
func TestEmbedErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query  string
		status int
		detail string
	}{
		{"", 422, "space is required"},
		{"space=Not%20A%20Slug", 422, "space must be a space slug"},
		{"space=nowhere", 404, ""},
		{"space=unconfirmed-hub", 404, ""},
	} {
		r := do(t, appReach, "GET", "/embed/jobs.js?"+tc.query, "", &public)
		if r.Status != tc.status || tc.detail != "" && !r.hasDetail(tc.detail) {
			t.Errorf("%s: %d %s", tc.query, r.Status, r.Body)
		}
	}
}
