// Command content-seed loads data into the content schema.
//
//	content-seed demo   the demo blog: a dozen posts (one draft, one scheduled)
//	                    with authors, categories and tags; safe to run again.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/internal/seed/blogseed"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

const schema = "content"

const usage = `usage: content-seed demo

  demo   load the demo blog posts (idempotent: posts are keyed by slug)

environment: DATABASE_URL, DB_MAX_CONNS, LOG_LEVEL`

// seedConfig is the part of the service configuration the seeder needs: it
// talks only to Postgres, so it needs no identity secret.
type seedConfig struct {
	LogLevel    string `env:"LOG_LEVEL" envDefault:"info"`
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	DBMaxConns  int32  `env:"DB_MAX_CONNS" envDefault:"4"`
}

func (c seedConfig) Validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is empty"))
	}
	if c.DBMaxConns < 1 {
		errs = append(errs, errors.New("DB_MAX_CONNS must be positive"))
	}
	return errors.Join(errs...)
}

func main() {
	log := logx.New("content-seed", os.Getenv("LOG_LEVEL"))
	if len(os.Args) != 2 || os.Args[1] != "demo" {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err := run(context.Background(), log); err != nil {
		log.Error("seed failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	var cfg seedConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: cfg.DBMaxConns})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, schema, migrations.FS, log); err != nil {
		return err
	}
	bus := postbus.New(postdb.New(pool), nil)
	posts := blogseed.Demo(time.Now())
	if err := blogseed.Load(ctx, bus, posts); err != nil {
		return err
	}
	log.Info("demo blog loaded", "posts", len(posts))
	return nil
}
