package webtest

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
)

// CheckFeed parses body as a feed of format (rss, atom or json) with a real
// feed reader's library (gofeed, which must detect that format) and holds it
// to the format's own rules: the required elements, dates in the format's
// syntax, unique ids or guids, and absolute URLs. It returns what gofeed
// read, so that tests can look at the items.
//
// The rules: RSS 2.0 (https://www.rssboard.org/rss-specification: channel
// title, link and description; an item's title or description; pubDate in
// RFC 822), Atom 1.0 (RFC 4287 4.1.1-4.1.2: feed and entry id, title and
// updated as RFC 3339, an author for the feed or each entry, a self link),
// JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/: version, title,
// items with a unique id and content_html or content_text).
func CheckFeed(format string, body []byte) (*gofeed.Feed, error) {
	f, err := gofeed.NewParser().ParseString(string(body))
	if err != nil {
		return nil, fmt.Errorf("gofeed: %w", err)
	}
	if f.FeedType != format {
		return nil, fmt.Errorf("gofeed read a %q feed, want %q", f.FeedType, format)
	}
	var problems []string
	switch format {
	case "rss":
		problems = rssRules(body)
	case "atom":
		problems = atomRules(body)
	case "json":
		problems = jsonFeedRules(body)
	default:
		return nil, fmt.Errorf("unknown feed format %q", format)
	}
	for _, it := range f.Items {
		if !absolute(it.Link) {
			problems = append(problems, fmt.Sprintf("item %q: link %q is not an absolute URL", it.Title, it.Link))
		}
	}
	if len(problems) > 0 {
		return f, errors.New(strings.Join(problems, "; "))
	}
	return f, nil
}

func absolute(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func rssRules(body []byte) []string {
	var doc struct {
		XMLName xml.Name `xml:"rss"`
		Version string   `xml:"version,attr"`
		Channel struct {
			Title string `xml:"title"`
			// link matches atom:link too: the one without a namespace is RSS's.
			Links []struct {
				XMLName xml.Name
				Value   string `xml:",chardata"`
			} `xml:"link"`
			Description   string `xml:"description"`
			LastBuildDate string `xml:"lastBuildDate"`
			Items         []struct {
				Title       string `xml:"title"`
				Link        string `xml:"link"`
				Description string `xml:"description"`
				PubDate     string `xml:"pubDate"`
				GUID        struct {
					IsPermaLink string `xml:"isPermaLink,attr"`
					Value       string `xml:",chardata"`
				} `xml:"guid"`
			} `xml:"item"`
		} `xml:"channel"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return []string{"rss: " + err.Error()}
	}
	var p []string
	ch := doc.Channel
	link := ""
	for _, l := range ch.Links {
		if l.XMLName.Space == "" {
			link = l.Value
		}
	}
	if doc.Version != "2.0" {
		p = append(p, "rss version is "+doc.Version)
	}
	if ch.Title == "" || ch.Description == "" || !absolute(link) {
		p = append(p, "rss channel needs title, description and an absolute link")
	}
	if ch.LastBuildDate != "" && !rfc822(ch.LastBuildDate) {
		p = append(p, "lastBuildDate is not an RFC 822 date: "+ch.LastBuildDate)
	}
	seen := map[string]bool{}
	for _, it := range ch.Items {
		if it.Title == "" && it.Description == "" {
			p = append(p, "rss item without title and description")
		}
		if it.GUID.Value == "" || seen[it.GUID.Value] {
			p = append(p, "rss guid missing or repeated: "+it.GUID.Value)
		}
		seen[it.GUID.Value] = true
		if it.GUID.IsPermaLink != "false" && !absolute(it.GUID.Value) {
			p = append(p, "rss permalink guid is not an absolute URL: "+it.GUID.Value)
		}
		if !rfc822(it.PubDate) {
			p = append(p, "pubDate is not an RFC 822 date: "+it.PubDate)
		}
	}
	return p
}

// rfc822 is RSS's date syntax (RFC 822 with four-digit years, as the RSS
// board advises).
func rfc822(s string) bool {
	_, err := mail.ParseDate(s)
	return err == nil
}

func atomRules(body []byte) []string {
	type link struct {
		Href string `xml:"href,attr"`
		Rel  string `xml:"rel,attr"`
	}
	type person struct {
		Name string `xml:"name"`
	}
	var doc struct {
		XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
		ID      string   `xml:"id"`
		Title   string   `xml:"title"`
		Updated string   `xml:"updated"`
		Links   []link   `xml:"link"`
		Authors []person `xml:"author"`
		Entries []struct {
			ID        string   `xml:"id"`
			Title     string   `xml:"title"`
			Updated   string   `xml:"updated"`
			Published string   `xml:"published"`
			Links     []link   `xml:"link"`
			Authors   []person `xml:"author"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return []string{"atom: " + err.Error()}
	}
	var p []string
	if !absolute(doc.ID) || doc.Title == "" || !rfc3339(doc.Updated) {
		p = append(p, "atom feed needs an IRI id, a title and an RFC 3339 updated")
	}
	self := false
	for _, l := range doc.Links {
		self = self || l.Rel == "self" && absolute(l.Href)
	}
	if !self {
		p = append(p, "atom feed has no absolute self link")
	}
	seen := map[string]bool{}
	for _, e := range doc.Entries {
		if e.ID == "" || seen[e.ID] || !absolute(e.ID) {
			p = append(p, "atom entry id missing, repeated or not an IRI: "+e.ID)
		}
		seen[e.ID] = true
		if e.Title == "" || !rfc3339(e.Updated) || e.Published != "" && !rfc3339(e.Published) {
			p = append(p, "atom entry needs a title and RFC 3339 dates: "+e.ID)
		}
		if len(doc.Authors) == 0 && len(e.Authors) == 0 {
			p = append(p, "atom entry without author in a feed without author: "+e.ID)
		}
		if len(e.Links) == 0 || !absolute(e.Links[0].Href) {
			p = append(p, "atom entry without an absolute link: "+e.ID)
		}
	}
	return p
}

func rfc3339(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

func jsonFeedRules(body []byte) []string {
	var doc struct {
		Version     string `json:"version"`
		Title       string `json:"title"`
		HomePageURL string `json:"home_page_url"`
		FeedURL     string `json:"feed_url"`
		Items       []struct {
			ID            *string `json:"id"`
			URL           string  `json:"url"`
			ContentHTML   *string `json:"content_html"`
			ContentText   *string `json:"content_text"`
			DatePublished string  `json:"date_published"`
			DateModified  string  `json:"date_modified"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return []string{"json feed: " + err.Error()}
	}
	var p []string
	if doc.Version != "https://jsonfeed.org/version/1.1" || doc.Title == "" || doc.Items == nil {
		p = append(p, "json feed needs version 1.1, a title and items")
	}
	if !absolute(doc.HomePageURL) || !absolute(doc.FeedURL) {
		p = append(p, "json feed urls are not absolute")
	}
	seen := map[string]bool{}
	for _, it := range doc.Items {
		if it.ID == nil || *it.ID == "" || seen[*it.ID] {
			p = append(p, "json feed item id missing or repeated")
			continue
		}
		seen[*it.ID] = true
		if it.ContentHTML == nil && it.ContentText == nil {
			p = append(p, "json feed item without content: "+*it.ID)
		}
		for _, d := range []string{it.DatePublished, it.DateModified} {
			if d != "" && !rfc3339(d) {
				p = append(p, "json feed date is not RFC 3339: "+d)
			}
		}
	}
	return p
}
