// Command content-seed loads data into the content schema.
//
//	content-seed demo   the demo blog: a dozen posts (one draft, one scheduled)
//	                    with authors, categories and tags; safe to run again.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/internal/seed/blogseed"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

const usage = `usage: content-seed demo

  demo   load the demo blog posts (idempotent: posts are keyed by slug)

environment: DATABASE_URL, DB_MAX_CONNS, LOG_LEVEL`

func main() {
	spec := service.Spec{Schema: "content", Migrations: migrations.FS, Changes: []string{scopes.Blog}, Timeout: 2 * time.Minute,
		Defaults: map[string]string{"DB_MAX_CONNS": "4"}}
	// The seeder talks only to Postgres: no identity secret.
	service.Seed("content-seed", spec, usage, os.Args[1:], map[string]service.SeedCommand{"demo": {Load: loadDemo}})
}

func loadDemo(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error {
	posts := blogseed.Demo(time.Now())
	if err := blogseed.Load(ctx, postbus.New(postdb.New(pool), nil), posts); err != nil {
		return err
	}
	log.Info("demo blog loaded", "posts", len(posts))
	return nil
}
