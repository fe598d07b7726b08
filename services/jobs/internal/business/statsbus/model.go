// Package statsbus counts what a job earns its poster — views of its public
// page, apply clicks through GET /go/{job_ref}, impressions in lists, feeds
// and embeds — on the server, without keeping anything that identifies a
// person (docs/privacy.md), and answers the posters' stats reads.
//
// Counting is off the request's path: a request hands its event to the
// Recorder (a bounded in-process buffer, no I/O), which writes batches
// every second or every BatchSize events: raw events and the daily
// roll-ups in one transaction. Days are UTC days.
package statsbus

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Kind is what happened.
type Kind int16

// The kinds of event (stats_events.kind).
const (
	KindView       Kind = 1
	KindClick      Kind = 2
	KindImpression Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindView:
		return "view"
	case KindClick:
		return "click"
	case KindImpression:
		return "impression"
	}
	return "unknown"
}

// Agent is who asked, as far as the user agent tells.
type Agent int16

// Agents (stats_events.agent): only browsers are views and clicks; known
// crawlers and requests without a user agent are counted apart.
const (
	AgentBrowser Agent = 0
	AgentCrawler Agent = 1
	AgentNone    Agent = 2
)

func (a Agent) String() string {
	switch a {
	case AgentBrowser:
		return "browser"
	case AgentCrawler:
		return "crawler"
	}
	return "none"
}

// Channels a job is seen through; a page view or a click given
// utm_source or ref is counted under that value (Channel).
const (
	ChannelPage   = "page"
	ChannelFeed   = "feed"
	ChannelEmbed  = "embed"
	ChannelAlert  = "alert"
	ChannelDirect = "direct" // a /go/ link without src
)

// ChannelAPI is the channel of a list answer to key id.
func ChannelAPI(keyID int64) string { return "api:" + strconv.FormatInt(keyID, 10) }

// ChannelAggregator is the channel of an aggregator's feed (indeed, jooble).
func ChannelAggregator(name string) string { return "aggregator:" + name }

// MaxChannel is the longest channel kept; longer ones are cut.
const MaxChannel = 64

// Channel returns the channel a client named (src, utm_source, ref): lower
// case letters, digits and ".:_-", at most MaxChannel of them; anything else
// is dropped, and "" when nothing is left (the caller's default applies).
// A channel is a label, never a URL: "https://x" becomes "https:x".
func Channel(raw string) string {
	raw = strings.ToLower(strings.TrimSpace(raw))
	var b strings.Builder
	for i := 0; i < len(raw) && b.Len() < MaxChannel; i++ {
		switch c := raw[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == ':', c == '_', c == '-':
			b.WriteByte(c)
		}
	}
	return b.String()
}

// crawlerTokens mark known crawlers, link previewers, monitors and HTTP
// libraries in a user agent (lower case).
var crawlerTokens = []string{
	"bot", "crawl", "spider", "slurp", "mediapartners", "facebookexternalhit", "embedly", "preview",
	"whatsapp", "curl/", "wget", "python-", "go-http-client", "libwww", "httpclient", "okhttp",
	"headless", "lighthouse", "pingdom", "uptime", "monitor", "scan", "feedfetcher", "archiver",
}

// Classify says who a user agent is.
func Classify(userAgent string) Agent {
	ua := strings.ToLower(strings.TrimSpace(userAgent))
	if ua == "" {
		return AgentNone
	}
	for _, t := range crawlerTokens {
		if strings.Contains(ua, t) {
			return AgentCrawler
		}
	}
	return AgentBrowser
}

// Event is one counted event, as the Recorder receives it.
type Event struct {
	JobID   int64
	Kind    Kind
	Channel string
	At      time.Time
	Agent   Agent
	// Visitor is the day's keyed hash of the client (Visitors.Of); 0 for
	// impressions and for crawlers.
	Visitor int64
	// N is the number of events (impressions coalesced); 0 means 1.
	N int32
}

// Day is the UTC day of t.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Interval of a stats answer.
const (
	IntervalDay  = "day"
	IntervalWeek = "week" // ISO weeks, Monday to Sunday (UTC)
)

// Counts are the numbers of one interval (or a channel of it).
type Counts struct {
	Views        int64
	UniqueViews  int64
	Clicks       int64
	UniqueClicks int64
	Impressions  int64
	// Crawler and no-agent requests, counted apart.
	BotViews, BotClicks int64
}

func (c *Counts) add(o Counts) {
	c.Views += o.Views
	c.UniqueViews += o.UniqueViews
	c.Clicks += o.Clicks
	c.UniqueClicks += o.UniqueClicks
	c.Impressions += o.Impressions
	c.BotViews += o.BotViews
	c.BotClicks += o.BotClicks
}

// Row is one roll-up row (stats_daily).
type Row struct {
	JobID   int64
	Day     time.Time
	Channel string // "" holds the uniques over every channel
	Kind    Kind
	Agent   Agent
	Events  int64
	Uniques int64
}

// Period is one interval of a job's series.
type Period struct {
	Start     time.Time // a UTC day (a Monday for weeks)
	Counts    Counts
	ByChannel map[string]Counts
}

// JobStats is a job's series.
type JobStats struct {
	JobID    int64
	From, To time.Time // UTC days, inclusive
	Interval string
	Totals   Counts
	Periods  []Period
}

// JobTotal is one job's totals in a space's summary.
type JobTotal struct {
	JobID  int64
	Title  string
	Counts Counts
}

// Summary is a caller's totals over its jobs.
type Summary struct {
	From, To time.Time
	Totals   Counts
	Top      []JobTotal
}

// Errors of the reads.
var (
	// ErrPlan: the caller's space is not on a plan that includes stats.
	ErrPlan = errors.New("stats are included in the Pro plan")
	// ErrRange: from and to do not make a range stats can answer.
	ErrRange = errors.New("bad range")
)
