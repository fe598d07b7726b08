package blogseed_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/internal/seed/blogseed"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "content_seed", pgtest.Schema{Name: "content", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 2}}, pgtest.SetPool(&pool)))
}

func TestDemoLoadsIdempotently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus := postbus.New(postdb.New(pool), nil)
	now := time.Now()
	posts := blogseed.Demo(now)
	if len(posts) != 12 {
		t.Fatalf("demo has %d posts, want a dozen", len(posts))
	}
	if err := blogseed.Load(ctx, bus, posts); err != nil {
		t.Fatal(err)
	}
	var firstUpdate time.Time
	if err := pool.QueryRow(ctx, `SELECT max(updated_at) FROM posts`).Scan(&firstUpdate); err != nil {
		t.Fatal(err)
	}
	if err := blogseed.Load(ctx, bus, blogseed.Demo(now)); err != nil {
		t.Fatal(err)
	}

	counts := map[string]int{}
	for table, q := range map[string]string{
		"posts": `SELECT count(*) FROM posts`, "authors": `SELECT count(*) FROM authors`,
		"categories": `SELECT count(*) FROM categories`, "post_authors": `SELECT count(*) FROM post_authors`,
		"drafts":    `SELECT count(*) FROM posts WHERE status = 'draft'`,
		"scheduled": `SELECT count(*) FROM posts WHERE status = 'published' AND published_at > now()`,
	} {
		var n int
		if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	want := map[string]int{"posts": 12, "authors": 4, "categories": 5, "post_authors": 16, "drafts": 1, "scheduled": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s = %d after two loads, want %d", k, counts[k], v)
		}
	}
	var secondUpdate time.Time
	if err := pool.QueryRow(ctx, `SELECT max(updated_at) FROM posts`).Scan(&secondUpdate); err != nil {
		t.Fatal(err)
	}
	if !secondUpdate.Equal(firstUpdate) {
		t.Errorf("a second identical load moved updated_at from %v to %v", firstUpdate, secondUpdate)
	}

	page, err := bus.List(ctx, postbus.Filter{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 10 || len(page.Posts) != 10 {
		t.Errorf("public posts = %d (total %d), want 10", len(page.Posts), page.Total)
	}
	for _, p := range page.Posts {
		if p.Slug == "coworking-trends-2027" || p.Slug == "candidate-interview-questions" {
			t.Errorf("%s is draft or scheduled but listed", p.Slug)
		}
	}
}
