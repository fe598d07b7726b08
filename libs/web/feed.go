package web

// FeedVersion is the version every public feed declares.
const FeedVersion = "vine/1"

// Feed is the shared shape of the public feeds (docs/internal-api.md),
// modelled on JSON Feed 1.1. Item is a service's item: FeedItem embedded
// beside the service's extension (_job, _post, _event).
type Feed[Item any] struct {
	Version     string `json:"version"`
	Title       string `json:"title"`
	FeedURL     string `json:"feed_url"`
	HomePageURL string `json:"home_page_url"`
	Items       []Item `json:"items"`
}

// NewFeed is a feed of items at FeedVersion.
func NewFeed[Item any](title, feedURL, homePageURL string, items []Item) Feed[Item] {
	return Feed[Item]{Version: FeedVersion, Title: title, FeedURL: feedURL, HomePageURL: homePageURL, Items: items}
}

// FeedItem holds the fields every feed item has. DatePublished is RFC 3339.
type FeedItem struct {
	ID            string   `json:"id"`
	URL           string   `json:"url"`
	Title         string   `json:"title"`
	Summary       string   `json:"summary"`
	DatePublished string   `json:"date_published"`
	Tags          []string `json:"tags"`
}
