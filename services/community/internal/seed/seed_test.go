package seed_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "community_seed", pgtest.Schema{Name: "community", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}

func TestLoadDemoIsIdempotent(t *testing.T) {
	ctx := context.Background()
	bus := eventbus.New(eventdb.New(pool))
	now := time.Now()
	for i := 0; i < 2; i++ {
		n, err := seed.LoadDemo(ctx, bus, now)
		if err != nil || n != 12 {
			t.Fatalf("load %d: %d events, %v", i, n, err)
		}
	}
	var total, upcoming, past, online, berlin, lisbon, nospace int
	err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE ends_at >= now()), count(*) FILTER (WHERE ends_at < now()),
		count(*) FILTER (WHERE is_online), count(*) FILTER (WHERE space_id = 1), count(*) FILTER (WHERE space_id = 2),
		count(*) FILTER (WHERE space_id IS NULL) FROM events`).Scan(&total, &upcoming, &past, &online, &berlin, &lisbon, &nospace)
	if err != nil {
		t.Fatal(err)
	}
	if total != 12 || upcoming != 9 || past != 3 || online != 4 || berlin != 5 || lisbon != 4 || nospace != 3 {
		t.Fatalf("total %d upcoming %d past %d online %d berlin %d lisbon %d none %d", total, upcoming, past, online, berlin, lisbon, nospace)
	}
}
