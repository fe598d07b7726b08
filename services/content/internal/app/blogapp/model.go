package blogapp

import (
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// authorJSON is one byline entry.
type authorJSON struct {
	Name     string `json:"name"`
	Username string `json:"username"`
}

// postJSON is the spec's Blog post shape plus the excerpt and the last edit.
type postJSON struct {
	Title       string       `json:"title"`
	SlugURL     string       `json:"slug_url"`
	Categories  []string     `json:"categories"`
	Tags        []string     `json:"tags"`
	Date        string       `json:"date"`
	Authors     []authorJSON `json:"authors"`
	ReadingTime int          `json:"reading_time"`
	Excerpt     string       `json:"excerpt"`
	UpdatedAt   string       `json:"updated_at"`
}

// postDetailJSON is one post read by slug: the post plus its sanitised body.
type postDetailJSON struct {
	postJSON
	HTML string `json:"html"`
}

// listJSON is the data of the list form of GET /v2/blog.
type listJSON struct {
	Posts      []postJSON     `json:"posts"`
	Total      int            `json:"total"`
	Limit      int            `json:"limit"`
	Offset     int            `json:"offset"`
	Pagination web.Pagination `json:"pagination"`
}

func isoTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func authorsJSON(as []postbus.Author) []authorJSON {
	out := make([]authorJSON, len(as))
	for i, a := range as {
		out[i] = authorJSON{Name: a.Name, Username: a.Username}
	}
	return out
}

func toPostJSON(p postbus.Post) postJSON {
	return postJSON{
		Title: p.Title, SlugURL: p.Slug, Categories: nonNil(p.Categories), Tags: nonNil(p.Tags),
		Date: isoTime(p.PublishedAt), Authors: authorsJSON(p.Authors), ReadingTime: p.ReadingTime,
		Excerpt: p.Excerpt, UpdatedAt: isoTime(p.UpdatedAt),
	}
}

func toListJSON(page postbus.Page, limit, offset int) listJSON {
	posts := make([]postJSON, len(page.Posts))
	for i, p := range page.Posts {
		posts[i] = toPostJSON(p)
	}
	return listJSON{
		Posts: posts, Total: page.Total, Limit: limit, Offset: offset,
		Pagination: web.NewPagination(page.Total, limit, offset, len(posts)),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// feedItemJSON is one feed entry (web.Feed) with the _post extension.
type feedItemJSON struct {
	web.FeedItem
	Post feedPostJSON `json:"_post"`
}

// feedPostJSON is the feed's extension for blog posts.
type feedPostJSON struct {
	Authors     []authorJSON `json:"authors"`
	ReadingTime int          `json:"reading_time"`
}
