// Package postdb stores blog posts in the content schema.
package postdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// Store implements postbus.Storer over a pool whose search_path is the
// content schema.
type Store struct{ db pg.Store }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{db: pg.NewStore(pool)} }

// WithReads sends List and BySlug where reads sends them (the replica of
// DATABASE_READ_URL): posts are written by the seed alone, so no reader
// waits for a write of its own.
func (s *Store) WithReads(reads *pg.Reads) *Store { return &Store{db: s.db.WithReads(reads)} }

var _ postbus.Storer = (*Store)(nil)

// postRow is a post as selected, with its relations aggregated into arrays.
type postRow struct {
	ID              int64
	Title           string
	Slug            string
	Excerpt         string
	BodyHTML        string
	ReadingTime     int32
	PublishedAt     time.Time
	UpdatedAt       time.Time
	AuthorNames     []string
	AuthorUsernames []string
	Categories      []string
	Tags            []string
}

func (r postRow) toBus() postbus.Post {
	authors := make([]postbus.Author, len(r.AuthorNames))
	for i := range r.AuthorNames {
		authors[i] = postbus.Author{Name: r.AuthorNames[i], Username: r.AuthorUsernames[i]}
	}
	return postbus.Post{
		ID: r.ID, Title: r.Title, Slug: r.Slug, Excerpt: r.Excerpt, BodyHTML: r.BodyHTML,
		ReadingTime: int(r.ReadingTime), PublishedAt: r.PublishedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Authors: authors, Categories: nonNil(r.Categories), Tags: nonNil(r.Tags),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// selectPost reads a post with its byline (in order), category and tag names
// (alphabetical). $body chooses whether the body is read.
const selectPost = `
SELECT p.id, p.title, p.slug, p.excerpt, %s, p.reading_time, p.published_at, p.updated_at,
       coalesce((SELECT array_agg(a.name ORDER BY pa.position, a.id) FROM post_authors pa
                 JOIN authors a ON a.id = pa.author_id WHERE pa.post_id = p.id), '{}'),
       coalesce((SELECT array_agg(a.username ORDER BY pa.position, a.id) FROM post_authors pa
                 JOIN authors a ON a.id = pa.author_id WHERE pa.post_id = p.id), '{}'),
       coalesce((SELECT array_agg(c.name ORDER BY c.name, c.id) FROM post_categories pc
                 JOIN categories c ON c.id = pc.category_id WHERE pc.post_id = p.id), '{}'),
       coalesce((SELECT array_agg(t.name ORDER BY t.name, t.id) FROM post_tags pt
                 JOIN tags t ON t.id = pt.tag_id WHERE pt.post_id = p.id), '{}')
FROM posts p`

// public is the one definition of a post anyone may see; $1 is now.
const public = ` p.status = 'published' AND p.published_at <= $1`

// filters: $2 category and $3 tag, each a slug or a name (case-insensitive), or empty for none.
const filters = `
  AND ($2 = '' OR EXISTS (SELECT 1 FROM post_categories pc JOIN categories c ON c.id = pc.category_id
                          WHERE pc.post_id = p.id AND (c.slug = $2 OR lower(c.name) = lower($2))))
  AND ($3 = '' OR EXISTS (SELECT 1 FROM post_tags pt JOIN tags t ON t.id = pt.tag_id
                          WHERE pt.post_id = p.id AND (t.slug = $3 OR lower(t.name) = lower($3))))`

var (
	listSQL   = fmt.Sprintf(selectPost, "''") + ` WHERE` + public + filters + ` ORDER BY p.published_at DESC, p.id DESC LIMIT $4 OFFSET $5`
	countSQL  = `SELECT count(*) FROM posts p WHERE` + public + filters
	bySlugSQL = fmt.Sprintf(selectPost, "p.body_html") + ` WHERE` + public + ` AND p.slug = $2`
)

func scanPost(row pgx.Row) (postRow, error) {
	var r postRow
	err := row.Scan(&r.ID, &r.Title, &r.Slug, &r.Excerpt, &r.BodyHTML, &r.ReadingTime, &r.PublishedAt, &r.UpdatedAt,
		&r.AuthorNames, &r.AuthorUsernames, &r.Categories, &r.Tags)
	return r, err
}

// List implements postbus.Storer. The page and the count are read in one
// round trip inside one snapshot, so total agrees with the page.
func (s *Store) List(ctx context.Context, now time.Time, f postbus.Filter) (posts []postbus.Post, total int, err error) {
	err = s.db.Read(ctx, func(db *pgxpool.Pool) error {
		posts, total, err = list(ctx, db, now, f)
		return err
	})
	return posts, total, err
}

func list(ctx context.Context, db *pgxpool.Pool, now time.Time, f postbus.Filter) ([]postbus.Post, int, error) {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	batch := &pgx.Batch{}
	batch.Queue(countSQL, now, f.Category, f.Tag)
	batch.Queue(listSQL, now, f.Category, f.Tag, f.Limit, f.Offset)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()

	var total int
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count posts: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("select posts: %w", err)
	}
	posts := make([]postbus.Post, 0, f.Limit)
	for rows.Next() {
		r, err := scanPost(rows)
		if err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("scan post: %w", err)
		}
		posts = append(posts, r.toBus())
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("select posts: %w", err)
	}
	return posts, total, nil
}

// Changed implements postbus.Storer. Posts are never deleted, so the latest
// write or publication date passed is when the public list last changed.
func (s *Store) Changed(ctx context.Context, now time.Time) (time.Time, error) {
	var t time.Time
	err := s.db.Read(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, `SELECT least($1::timestamptz, greatest(coalesce(max(updated_at), 'epoch'),
			coalesce(max(published_at) FILTER (WHERE status = 'published' AND published_at <= $1), 'epoch'))) FROM posts`, now).Scan(&t)
	})
	return t, err
}

// BySlug implements postbus.Storer.
func (s *Store) BySlug(ctx context.Context, now time.Time, slug string) (postbus.Post, error) {
	var r postRow
	err := s.db.Read(ctx, func(db *pgxpool.Pool) error {
		var err error
		r, err = scanPost(db.QueryRow(ctx, bySlugSQL, now, slug))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return postbus.Post{}, postbus.ErrNotFound
	}
	if err != nil {
		return postbus.Post{}, fmt.Errorf("select post: %w", err)
	}
	return r.toBus(), nil
}

// Upsert implements postbus.Storer: the post is keyed by slug, and its
// authors (by username), categories and tags (by slug) are created or renamed
// as needed; its links are replaced. updated_at moves only when something
// about the post itself changed, so re-running a seed leaves it alone.
func (s *Store) Upsert(ctx context.Context, p postbus.StorePost) (int64, error) {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	var publishedAt *time.Time
	if !p.PublishedAt.IsZero() {
		t := p.PublishedAt.UTC()
		publishedAt = &t
	}
	var id int64
	err = tx.QueryRow(ctx, `
INSERT INTO posts (title, slug, body_html, excerpt, reading_time, status, published_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (slug) DO UPDATE SET
    title = EXCLUDED.title, body_html = EXCLUDED.body_html, excerpt = EXCLUDED.excerpt,
    reading_time = EXCLUDED.reading_time, status = EXCLUDED.status, published_at = EXCLUDED.published_at,
    updated_at = CASE WHEN (posts.title, posts.body_html, posts.excerpt, posts.status, posts.published_at)
                      IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.body_html, EXCLUDED.excerpt, EXCLUDED.status, EXCLUDED.published_at)
                      THEN now() ELSE posts.updated_at END
RETURNING id`,
		p.Title, p.Slug, p.BodyHTML, p.Excerpt, p.ReadingTime, string(p.Status), publishedAt).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("upsert post: %w", err)
	}

	for _, q := range []string{`DELETE FROM post_authors WHERE post_id = $1`,
		`DELETE FROM post_categories WHERE post_id = $1`, `DELETE FROM post_tags WHERE post_id = $1`} {
		if _, err := tx.Exec(ctx, q, id); err != nil {
			return 0, fmt.Errorf("clear links: %w", err)
		}
	}
	for i, a := range p.Authors {
		if _, err := tx.Exec(ctx, `
WITH a AS (
    INSERT INTO authors (name, username) VALUES ($2, $3)
    ON CONFLICT (username) DO UPDATE SET name = EXCLUDED.name
    RETURNING id)
INSERT INTO post_authors (post_id, author_id, position) SELECT $1, id, $4 FROM a
ON CONFLICT DO NOTHING`, id, a.Name, a.Username, i); err != nil {
			return 0, fmt.Errorf("link author %s: %w", a.Username, err)
		}
	}
	for _, link := range []struct {
		table, join, col string
		terms            []postbus.Term
	}{
		{"categories", "post_categories", "category_id", p.Categories},
		{"tags", "post_tags", "tag_id", p.Tags},
	} {
		q := fmt.Sprintf(`
WITH t AS (
    INSERT INTO %s (name, slug) VALUES ($2, $3)
    ON CONFLICT (slug) DO UPDATE SET name = EXCLUDED.name
    RETURNING id)
INSERT INTO %s (post_id, %s) SELECT $1, id FROM t
ON CONFLICT DO NOTHING`, link.table, link.join, link.col)
		for _, t := range link.terms {
			if _, err := tx.Exec(ctx, q, id, t.Name, t.Slug); err != nil {
				return 0, fmt.Errorf("link %s %s: %w", link.table, t.Slug, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return id, nil
}
