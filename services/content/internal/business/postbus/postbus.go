// Package postbus holds the rules of the blog: which posts are public, how
// they are listed, how their body is made safe to serve and how long they take
// to read.
package postbus

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors the handlers map to envelope codes.
var (
	// ErrNotFound: no public post answers the request (unknown, draft or
	// scheduled posts are all "not found" so that nothing unpublished leaks).
	ErrNotFound = errors.New("post not found")
	// ErrInvalid: a post to be written breaks a rule; see *InvalidError.
	ErrInvalid = errors.New("invalid post")
)

// InvalidError lists every problem of a post to be written.
type InvalidError struct{ Problems []string }

func (e *InvalidError) Error() string { return "invalid post: " + strings.Join(e.Problems, "; ") }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Status of a post.
type Status string

// Statuses a post can have. Only published posts whose publication time has
// come are public.
const (
	StatusDraft     Status = "draft"
	StatusPublished Status = "published"
)

// List bounds of GET /v2/blog.
const (
	DefaultLimit = 10
	MaxLimit     = 50
	// MaxOffset bounds deep pagination; a blog never holds this many posts, and
	// the bound keeps a hostile offset from turning into a long scan.
	MaxOffset = 100_000
)

// Author of a post.
type Author struct {
	Name     string
	Username string
}

// Term is a category or a tag: a display name and a URL-safe slug.
type Term struct {
	Name string
	Slug string
}

// Post is a public post as listed. BodyHTML is filled only when one post is
// read by its slug, and is then already sanitised.
type Post struct {
	ID          int64
	Title       string
	Slug        string
	Excerpt     string
	BodyHTML    string
	ReadingTime int
	PublishedAt time.Time
	UpdatedAt   time.Time
	Authors     []Author
	Categories  []string
	Tags        []string
}

// Filter selects a page of public posts. Category and Tag match a slug or,
// case-insensitively, a name; empty means no filter.
type Filter struct {
	Category string
	Tag      string
	Limit    int
	Offset   int
}

// Page is one page of the list plus the number of posts matching the filter.
type Page struct {
	Posts []Post
	Total int
}

// NewPost is a post to be created or updated (matched by slug).
type NewPost struct {
	Title       string
	Slug        string
	BodyHTML    string
	Excerpt     string // plain text; derived from the body when empty
	Status      Status
	PublishedAt time.Time // required when published; may lie in the future (scheduled)
	Authors     []Author  // in byline order; at least one
	Categories  []Term
	Tags        []Term
}

// StorePost is what the store writes: the post with its derived fields.
type StorePost struct {
	NewPost
	ReadingTime int
}

// Storer is the storage the blog needs.
type Storer interface {
	// List returns the page of posts published at or before now, newest first
	// (ties broken by id, newest first), and the number of posts matching.
	List(ctx context.Context, now time.Time, f Filter) ([]Post, int, error)
	// BySlug returns one post published at or before now, with its raw body,
	// or ErrNotFound.
	BySlug(ctx context.Context, now time.Time, slug string) (Post, error)
	// Upsert writes a post keyed by its slug with its authors, categories and
	// tags (created when new), and returns its id.
	Upsert(ctx context.Context, p StorePost) (int64, error)
	// Changed is when the public posts as of now last changed: a post was
	// written, or one scheduled for later came out.
	Changed(ctx context.Context, now time.Time) (time.Time, error)
}

// Business is the blog's entry point for handlers and commands.
type Business struct {
	store Storer
	now   func() time.Time
}

// New returns the blog rules over store. now may be nil (time.Now).
func New(store Storer, now func() time.Time) *Business {
	if now == nil {
		now = time.Now
	}
	return &Business{store: store, now: now}
}

// List returns a page of public posts. Limit and offset must already be in
// range (the handler reports out-of-range values to the client).
func (b *Business) List(ctx context.Context, f Filter) (Page, error) {
	if f.Limit < 1 || f.Limit > MaxLimit || f.Offset < 0 || f.Offset > MaxOffset {
		return Page{}, fmt.Errorf("list posts: limit %d or offset %d out of range", f.Limit, f.Offset)
	}
	posts, total, err := b.store.List(ctx, b.now(), f)
	if err != nil {
		return Page{}, fmt.Errorf("list posts: %w", err)
	}
	return Page{Posts: posts, Total: total}, nil
}

// Feed returns the latest public posts with their bodies sanitised for
// display, and when the public posts last changed (the feeds' Last-Modified).
func (b *Business) Feed(ctx context.Context, limit int) ([]Post, time.Time, error) {
	now := b.now()
	page, err := b.List(ctx, Filter{Limit: limit})
	if err != nil {
		return nil, time.Time{}, err
	}
	changed, err := b.store.Changed(ctx, now)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("posts changed: %w", err)
	}
	for i := range page.Posts {
		page.Posts[i].BodyHTML = SanitizeHTML(page.Posts[i].BodyHTML)
	}
	return page.Posts, changed, nil
}

// BySlug returns one public post with its body sanitised for display.
func (b *Business) BySlug(ctx context.Context, slug string) (Post, error) {
	p, err := b.store.BySlug(ctx, b.now(), slug)
	if err != nil {
		return Post{}, fmt.Errorf("post by slug: %w", err)
	}
	p.BodyHTML = SanitizeHTML(p.BodyHTML)
	return p, nil
}

// Upsert validates a post, derives its reading time and excerpt, and writes it.
func (b *Business) Upsert(ctx context.Context, np NewPost) (int64, error) {
	np.Title = strings.TrimSpace(np.Title)
	np.Excerpt = strings.TrimSpace(np.Excerpt)
	if err := validate(np); err != nil {
		return 0, err
	}
	if np.Excerpt == "" {
		np.Excerpt = Summarize(PlainText(np.BodyHTML), ExcerptMaxChars)
	} else {
		np.Excerpt = Summarize(PlainText(np.Excerpt), ExcerptMaxChars)
	}
	id, err := b.store.Upsert(ctx, StorePost{NewPost: np, ReadingTime: ReadingTime(np.BodyHTML)})
	if err != nil {
		return 0, fmt.Errorf("upsert post %s: %w", np.Slug, err)
	}
	return id, nil
}

var (
	slugRE     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	usernameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
)

// IsSlug reports whether s is a well-formed slug (lowercase words joined by hyphens).
func IsSlug(s string) bool { return len(s) <= 200 && slugRE.MatchString(s) }

func validate(np NewPost) error {
	var problems []string
	if np.Title == "" || utf8.RuneCountInString(np.Title) > 300 {
		problems = append(problems, "title must be 1 to 300 characters")
	}
	if !IsSlug(np.Slug) {
		problems = append(problems, "slug must be lowercase letters and digits joined by hyphens, at most 200 characters")
	}
	if strings.TrimSpace(np.BodyHTML) == "" {
		problems = append(problems, "body must not be empty")
	}
	switch np.Status {
	case StatusDraft:
	case StatusPublished:
		if np.PublishedAt.IsZero() {
			problems = append(problems, "a published post needs published_at")
		}
	default:
		problems = append(problems, "status must be draft or published")
	}
	if len(np.Authors) == 0 {
		problems = append(problems, "a post needs at least one author")
	}
	for _, a := range np.Authors {
		if strings.TrimSpace(a.Name) == "" || !usernameRE.MatchString(a.Username) {
			problems = append(problems, fmt.Sprintf("author %q needs a name and a lowercase username", a.Username))
		}
	}
	for _, t := range append(append([]Term(nil), np.Categories...), np.Tags...) {
		if strings.TrimSpace(t.Name) == "" || len(t.Name) > 100 || !IsSlug(t.Slug) || len(t.Slug) > 100 {
			problems = append(problems, fmt.Sprintf("category or tag %q needs a name and a slug", t.Slug))
		}
	}
	if len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	return nil
}
