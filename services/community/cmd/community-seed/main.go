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

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const schema = "community"

func main() {
	service.Main("community-seed", func(ctx context.Context, log *slog.Logger) error {
		return run(ctx, os.Args[1:], log, os.Stderr)
	})
}

func run(ctx context.Context, args []string, log *slog.Logger, usage io.Writer) error {
	if len(args) != 1 || args[0] != "demo" {
		fmt.Fprintln(usage, "usage: community-seed demo")
		return errors.New("unknown or missing command")
	}
	spec := service.Spec{Schema: schema, Migrations: migrations.FS, Timeout: time.Minute,
		Defaults: map[string]string{"DB_MAX_CONNS": "2"}}
	return service.RunTool(ctx, log, spec, func(ctx context.Context, pool *pgxpool.Pool, _ *config.Common) error {
		n, err := seed.LoadDemo(ctx, eventbus.New(eventdb.New(pool)), time.Now())
		if err != nil {
			return err
		}
		log.Info("demo events loaded", "events", n)
		return nil
	})
}
