package web

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// The standard formats of the public feeds (?format=): RSS 2.0, Atom 1.0 and
// JSON Feed 1.1, beside the vine/1 envelope, which stays the default.
const (
	FormatVine = ""
	FormatRSS  = "rss"
	FormatAtom = "atom"
	FormatJSON = "json"
)

// The formats' media types (RSS has no registered one; application/rss+xml
// is what feed readers and browsers recognise).
const (
	MIMERSS      = "application/rss+xml; charset=utf-8"
	MIMEAtom     = "application/atom+xml; charset=utf-8"
	MIMEJSONFeed = "application/feed+json; charset=utf-8"
)

// FeedFormat reads ?format= with q; a value other than rss, atom or json is
// a problem of q.
func FeedFormat(q *Query) string {
	v, given := q.Raw("format")
	switch v {
	case FormatRSS, FormatAtom, FormatJSON:
		return v
	}
	if given {
		q.Add("format must be one of rss, atom, json")
	}
	return FormatVine
}

// Syndication is a feed in the terms the standard formats share. Every URL
// is absolute.
type Syndication struct {
	Title, Description string
	// FeedURL is the feed's own address in its format (the self link), and
	// HomePageURL the page it is the feed of.
	FeedURL, HomePageURL string
	// Updated is when the feed last changed: Last-Modified, and the dates
	// the formats require of the feed itself. It must move whenever an item
	// changes, appears or leaves (zero: unknown, no Last-Modified).
	Updated time.Time
	Items   []SyndicationItem
}

// SyndicationItem is one entry. ID is unique and permanent, an absolute URL
// (Atom's id must be an IRI; RSS's guid is then not a permalink).
type SyndicationItem struct {
	ID, URL, Title string
	// ContentHTML is the item's sanitised HTML (written escaped or as JSON
	// text, never as markup of the feed itself); Summary is plain text.
	ContentHTML, Summary string
	Published, Updated   time.Time
	Tags                 []string
	Author               string
}

// SendFeed answers a standard feed in format (not FormatVine) with a weak
// ETag over its bytes, Last-Modified, and 304 when the client holds it
// (If-None-Match first, If-Modified-Since only without it, RFC 9110 13.2.2).
func SendFeed(c *fiber.Ctx, format string, f Syndication, maxAgeSeconds int) error {
	var body []byte
	var err error
	var mime string
	switch format {
	case FormatRSS:
		body, err = f.RSS()
		mime = MIMERSS
	case FormatAtom:
		body, err = f.Atom()
		mime = MIMEAtom
	case FormatJSON:
		body, err = f.JSONFeed()
		mime = MIMEJSONFeed
	default:
		return fmt.Errorf("feed format %q", format)
	}
	if err != nil {
		return err
	}
	return SendValidated(c, mime, body, f.Updated, "public, max-age="+strconv.Itoa(maxAgeSeconds))
}

// SendValidated writes a public 200 of mime with a weak ETag over body and
// Last-Modified (when modified is not zero), or a 304 without the body when
// the client's copy is current.
func SendValidated(c *fiber.Ctx, mime string, body []byte, modified time.Time, cacheControl string) error {
	h := fnv.New64a()
	_, _ = h.Write(body)
	etag := `W/"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderCacheControl, cacheControl)
	c.Set(fiber.HeaderVary, "Accept-Encoding")
	if !modified.IsZero() {
		c.Set(fiber.HeaderLastModified, modified.UTC().Format(http.TimeFormat))
	}
	if NotModified(c, etag, modified) {
		return c.SendStatus(http.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, mime)
	return c.Status(http.StatusOK).Send(body)
}

// NotModified reports whether the request's validators match etag or, when
// it sends no If-None-Match, modified (to the second, as HTTP dates are).
func NotModified(c *fiber.Ctx, etag string, modified time.Time) bool {
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" {
		return ETagMatches(inm, etag)
	}
	ims := c.Get(fiber.HeaderIfModifiedSince)
	if ims == "" || modified.IsZero() {
		return false
	}
	t, err := http.ParseTime(ims)
	return err == nil && !modified.Truncate(time.Second).After(t)
}

// ---- RSS 2.0 (https://www.rssboard.org/rss-specification) ----

type rssDoc struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	Atom    string     `xml:"xmlns:atom,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title         string    `xml:"title"`
	Link          string    `xml:"link"`
	Description   string    `xml:"description"`
	Self          atomLink  `xml:"atom:link"`
	LastBuildDate string    `xml:"lastBuildDate,omitempty"`
	Generator     string    `xml:"generator"`
	Docs          string    `xml:"docs"`
	Items         []rssItem `xml:"item"`
}

type rssItem struct {
	Title       string   `xml:"title"`
	Link        string   `xml:"link"`
	Description string   `xml:"description"`
	GUID        rssGUID  `xml:"guid"`
	PubDate     string   `xml:"pubDate"`
	Categories  []string `xml:"category"`
}

type rssGUID struct {
	IsPermaLink string `xml:"isPermaLink,attr"`
	Value       string `xml:",chardata"`
}

// RSS is the feed as an RSS 2.0 document, with the Atom self link the RSS
// Advisory Board recommends. Items carry no author: RSS's must be an e-mail
// address.
func (f Syndication) RSS() ([]byte, error) {
	ch := rssChannel{Title: f.Title, Link: f.HomePageURL, Description: f.Description, Generator: "coworkjobs",
		Docs: "https://www.rssboard.org/rss-specification",
		Self: atomLink{Href: f.FeedURL, Rel: "self", Type: "application/rss+xml"}, Items: make([]rssItem, len(f.Items))}
	if !f.Updated.IsZero() {
		ch.LastBuildDate = f.Updated.UTC().Format(time.RFC1123Z)
	}
	for i, it := range f.Items {
		ch.Items[i] = rssItem{Title: it.Title, Link: it.URL, Description: it.ContentHTML,
			GUID: rssGUID{IsPermaLink: "false", Value: it.ID}, PubDate: it.Published.UTC().Format(time.RFC1123Z), Categories: it.Tags}
	}
	return marshalXML(rssDoc{Version: "2.0", Atom: "http://www.w3.org/2005/Atom", Channel: ch})
}

// ---- Atom 1.0 (RFC 4287) ----

type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Sub     string      `xml:"subtitle,omitempty"`
	Updated string      `xml:"updated"`
	Links   []atomLink  `xml:"link"`
	Author  atomPerson  `xml:"author"`
	Gen     string      `xml:"generator"`
	Entries []atomEntry `xml:"entry"`
}

type atomLink struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr,omitempty"`
	Type string `xml:"type,attr,omitempty"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomText struct {
	Type  string `xml:"type,attr,omitempty"`
	Value string `xml:",chardata"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      string         `xml:"title"`
	Updated    string         `xml:"updated"`
	Published  string         `xml:"published"`
	Link       atomLink       `xml:"link"`
	Author     *atomPerson    `xml:"author,omitempty"`
	Summary    *atomText      `xml:"summary,omitempty"`
	Content    atomText       `xml:"content"`
	Categories []atomCategory `xml:"category"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

// Atom is the feed as an Atom 1.0 document. A feed without items or date
// says it was updated now: atom:updated is required.
func (f Syndication) Atom() ([]byte, error) {
	updated := f.Updated
	if updated.IsZero() {
		updated = time.Now()
	}
	a := atomFeed{ID: f.FeedURL, Title: f.Title, Sub: f.Description, Updated: rfc3339(updated),
		Links:  []atomLink{{Href: f.FeedURL, Rel: "self", Type: "application/atom+xml"}, {Href: f.HomePageURL, Rel: "alternate", Type: "text/html"}},
		Author: atomPerson{Name: "coworkjobs"}, Gen: "coworkjobs", Entries: make([]atomEntry, len(f.Items))}
	for i, it := range f.Items {
		e := atomEntry{ID: it.ID, Title: it.Title, Updated: rfc3339(later(it.Updated, it.Published)), Published: rfc3339(it.Published),
			Link: atomLink{Href: it.URL, Rel: "alternate", Type: "text/html"}, Content: atomText{Type: "html", Value: it.ContentHTML}}
		if it.Summary != "" {
			e.Summary = &atomText{Type: "text", Value: it.Summary}
		}
		if it.Author != "" {
			e.Author = &atomPerson{Name: it.Author}
		}
		for _, t := range it.Tags {
			e.Categories = append(e.Categories, atomCategory{Term: t})
		}
		a.Entries[i] = e
	}
	return marshalXML(a)
}

// ---- JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/) ----

type jsonFeed struct {
	Version     string         `json:"version"`
	Title       string         `json:"title"`
	HomePageURL string         `json:"home_page_url"`
	FeedURL     string         `json:"feed_url"`
	Description string         `json:"description,omitempty"`
	Items       []jsonFeedItem `json:"items"`
}

type jsonFeedItem struct {
	ID            string           `json:"id"`
	URL           string           `json:"url"`
	Title         string           `json:"title"`
	ContentHTML   string           `json:"content_html"`
	Summary       string           `json:"summary,omitempty"`
	DatePublished string           `json:"date_published"`
	DateModified  string           `json:"date_modified"`
	Tags          []string         `json:"tags,omitempty"`
	Authors       []jsonFeedAuthor `json:"authors,omitempty"`
}

type jsonFeedAuthor struct {
	Name string `json:"name"`
}

// JSONFeed is the feed as a JSON Feed 1.1 document.
func (f Syndication) JSONFeed() ([]byte, error) {
	j := jsonFeed{Version: "https://jsonfeed.org/version/1.1", Title: f.Title, HomePageURL: f.HomePageURL, FeedURL: f.FeedURL,
		Description: f.Description, Items: make([]jsonFeedItem, len(f.Items))}
	for i, it := range f.Items {
		j.Items[i] = jsonFeedItem{ID: it.ID, URL: it.URL, Title: it.Title, ContentHTML: it.ContentHTML, Summary: it.Summary,
			DatePublished: rfc3339(it.Published), DateModified: rfc3339(later(it.Updated, it.Published)), Tags: it.Tags}
		if it.Author != "" {
			j.Items[i].Authors = []jsonFeedAuthor{{Name: it.Author}}
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("encode json feed: %w", err)
	}
	return b, nil
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func marshalXML(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode feed: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}
