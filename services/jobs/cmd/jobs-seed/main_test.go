package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobsseed", pgtest.Schema{Name: "jobs", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}

// make bench seeds with synthetic: it must satisfy every constraint the
// migrations add (00048's is_remote = workplace_type check once stopped it).
func TestSyntheticSeedsWhatTheSchemaAccepts(t *testing.T) {
	ctx := context.Background()
	cat := dirapi.Catalog{
		Cities: []dirapi.City{{ID: 1, Name: "Berlin", Slug: "berlin", Confirmed: true, Latitude: 52.5, Longitude: 13.4, CountryCode: "DE"},
			{ID: 2, Name: "Lisbon", Slug: "lisbon", Confirmed: true, Latitude: 38.7, Longitude: -9.1, CountryCode: "PT"}},
		Spaces: []dirapi.Space{{ID: 10, Name: "Desk One", Slug: "desk-one", Confirmed: true, CityID: 1},
			{ID: 11, Name: "Hub Two", Slug: "hub-two", Confirmed: true, CityID: 2}},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := synthetic(ctx, log, pool, cat, 400, 7); err != nil {
		t.Fatal(err)
	}
	var n, remote, hybrid, onSite int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE workplace_type = 'remote' AND is_remote),
		count(*) FILTER (WHERE workplace_type = 'hybrid'), count(*) FILTER (WHERE workplace_type = 'on_site')
		FROM jobs WHERE key_id = $1`, syntheticKeyID).Scan(&n, &remote, &hybrid, &onSite); err != nil {
		t.Fatal(err)
	}
	if n != 400 || remote == 0 || hybrid == 0 || onSite == 0 || remote+hybrid+onSite != n {
		t.Fatalf("%d jobs: %d remote, %d hybrid, %d on site", n, remote, hybrid, onSite)
	}
}
