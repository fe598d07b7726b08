// Command community-seed loads demo data into the community schema.
//
//	community-seed demo   a dozen events (upcoming and past, online and in
//	                      venues) in demo spaces 1 (Berlin), 2 (Lisbon) and none;
//	                      safe to run again: events are matched by slug.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const schema = "community"

type seedConfig struct {
	LogLevel    string `env:"LOG_LEVEL" envDefault:"info"`
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
}

func (c seedConfig) Validate() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL is empty")
	}
	return nil
}

func main() {
	log := logx.New("community-seed", os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), os.Args[1:], log, os.Stderr); err != nil {
		log.Error("seed failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log *slog.Logger, usage io.Writer) error {
	if len(args) != 1 || args[0] != "demo" {
		fmt.Fprintln(usage, "usage: community-seed demo")
		return errors.New("unknown or missing command")
	}
	var cfg seedConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, schema, migrations.FS, log); err != nil {
		return err
	}
	n, err := seed.LoadDemo(ctx, eventbus.New(eventdb.New(pool)), time.Now())
	if err != nil {
		return err
	}
	log.Info("demo events loaded", "events", n)
	return nil
}
