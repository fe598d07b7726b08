package eventdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

// With DATABASE_READ_URL the events' reads (the list and the feed: Count and
// Query) are answered by the replica, and by the primary once it stops.
func TestReadsGoToTheReplica(t *testing.T) {
	f := eventbus.Filter{Now: time.Now()}
	pgtest.CheckRoutedReads(t, "community", migrations.FS,
		func(ctx context.Context, primary *pgxpool.Pool) (int, error) {
			if _, err := seed.LoadDemo(ctx, eventbus.New(eventdb.New(primary)), f.Now); err != nil {
				return 0, err
			}
			return eventdb.New(primary).Count(ctx, f)
		},
		func(ctx context.Context, primary *pgxpool.Pool, reads *pg.Reads) (int, error) {
			routed := eventdb.New(primary).WithReads(reads)
			n, err := routed.Count(ctx, f)
			if err != nil {
				return 0, err
			}
			evs, err := routed.Query(ctx, f, 0, 50)
			if err != nil {
				return 0, err
			}
			if len(evs) != n {
				return 0, fmt.Errorf("a page of %d events beside a count of %d", len(evs), n)
			}
			return n, nil
		})
}
