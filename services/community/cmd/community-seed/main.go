// Command community-seed loads demo data into the community schema.
//
//	community-seed demo   a dozen events (upcoming and past, online and in
//	                      venues) in demo spaces 1 (Berlin), 2 (Lisbon) and none;
//	                      safe to run again: events are matched by slug.
package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

func main() {
	spec := service.Spec{Schema: "community", Migrations: migrations.FS, Changes: []string{scopes.Events}, Timeout: time.Minute,
		Defaults: map[string]string{"DB_MAX_CONNS": "2"}}
	service.Seed("community-seed", spec, "usage: community-seed demo", os.Args[1:], map[string]service.SeedCommand{
		"demo": {Load: loadDemo},
	})
}

func loadDemo(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool) error {
	n, err := seed.LoadDemo(ctx, eventbus.New(eventdb.New(pool)), time.Now())
	if err != nil {
		return err
	}
	log.Info("demo events loaded", "events", n)
	return nil
}
