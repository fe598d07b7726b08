// Command directory-seed loads data into the directory schema (migrating it
// first):
//
//	directory-seed demo
//	    the demo set: real cities with true coordinates, realistic spaces,
//	    and spaces 1 (confirmed Pro, Berlin), 2 (confirmed, Lisbon) and
//	    3 (unconfirmed, Paris) that the gateway's demo keys refer to.
//	    Idempotent: run it as often as you like.
//	directory-seed synthetic -cities 2000 -spaces 20000 -seed 42 [-reset]
//	    a large deterministic set for benchmarks (same seed, same data). It
//	    replaces the previous synthetic rows (slugs starting with "syn-") and
//	    keeps the demo set; -reset empties the directory first, so that ids are
//	    deterministic too.
//
// Environment: DATABASE_URL, LOG_LEVEL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

const schema = "directory"

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

const usage = `usage:
  directory-seed demo
  directory-seed synthetic [-cities 2000] [-spaces 20000] [-seed 42] [-reset]`

func main() {
	log := logx.New("directory-seed", os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), log, os.Args[1:]); err != nil {
		log.Error("seed failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return errors.New("missing command")
	}
	var opts seed.SyntheticOptions
	switch args[0] {
	case "demo":
		if len(args) > 1 {
			return fmt.Errorf("demo takes no arguments\n%s", usage)
		}
	case "synthetic":
		fs := flag.NewFlagSet("synthetic", flag.ContinueOnError)
		fs.IntVar(&opts.Cities, "cities", 2000, "number of cities")
		fs.IntVar(&opts.Spaces, "spaces", 20000, "number of spaces")
		fs.Uint64Var(&opts.Seed, "seed", 42, "random seed (same seed, same data)")
		fs.BoolVar(&opts.Reset, "reset", false, "empty the whole directory first (ids become deterministic)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("unexpected arguments %v\n%s", fs.Args(), usage)
		}
		if err := opts.Validate(); err != nil {
			return err
		}
	default:
		fmt.Fprintln(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}

	var cfg seedConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, schema, migrations.FS, log); err != nil {
		return err
	}

	start := time.Now()
	var stats seed.Stats
	if args[0] == "demo" {
		stats, err = seed.LoadDemo(ctx, pool)
	} else {
		stats, err = seed.LoadSynthetic(ctx, pool, opts)
	}
	if err != nil {
		return err
	}
	attrs := []any{"set", args[0], "stats", stats.String(), "duration", time.Since(start).String()}
	if args[0] == "synthetic" {
		attrs = append(attrs, "seed", opts.Seed, "reset", opts.Reset)
	}
	log.Info("directory seeded", attrs...)
	return nil
}
