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
// Environment: DATABASE_URL, DB_MAX_CONNS (4), LOG_LEVEL.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

const usage = `usage:
  directory-seed demo
  directory-seed synthetic [-cities 2000] [-spaces 20000] [-seed 42] [-reset]`

func main() {
	var opts seed.SyntheticOptions
	spec := service.Spec{Schema: "directory", Migrations: migrations.FS, Changes: []string{scopes.Directory}, Defaults: map[string]string{"DB_MAX_CONNS": "4"}}
	service.Seed("directory-seed", spec, usage, os.Args[1:], map[string]service.SeedCommand{
		"demo": {Load: func(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error {
			return load(ctx, log, pool, "demo", opts)
		}},
		"synthetic": {Args: func(args []string) error { return syntheticFlags(args, &opts) },
			Load: func(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error {
				return load(ctx, log, pool, "synthetic", opts)
			}},
	})
}

// syntheticFlags reads synthetic's flags into opts.
func syntheticFlags(args []string, opts *seed.SyntheticOptions) error {
	fs := flag.NewFlagSet("synthetic", flag.ContinueOnError)
	fs.IntVar(&opts.Cities, "cities", 2000, "number of cities")
	fs.IntVar(&opts.Spaces, "spaces", 20000, "number of spaces")
	fs.Uint64Var(&opts.Seed, "seed", 42, "random seed (same seed, same data)")
	fs.BoolVar(&opts.Reset, "reset", false, "empty the whole directory first (ids become deterministic)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return opts.Validate()
}

// load loads set ("demo" or "synthetic") and logs what it wrote.
func load(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, set string, opts seed.SyntheticOptions) error {
	start := time.Now()
	var stats seed.Stats
	var err error
	if set == "demo" {
		stats, err = seed.LoadDemo(ctx, pool)
	} else {
		stats, err = seed.LoadSynthetic(ctx, pool, opts)
	}
	if err != nil {
		return err
	}
	attrs := []any{"set", set, "stats", stats.String(), "duration", time.Since(start).String()}
	if set == "synthetic" {
		attrs = append(attrs, "seed", opts.Seed, "reset", opts.Reset)
	}
	log.Info("directory seeded", attrs...)
	return nil
}
