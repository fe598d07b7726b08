package pg_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

// TestReadsReplica runs pg.Reads on a real streaming replica: a read with
// no position goes to the replica, one after a write the replica has not
// replayed (replay paused) to the primary and sees the write, and a replica
// that is down leaves every read to the primary.
func TestReadsReplica(t *testing.T) {
	rep := pgtest.Replica(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(url string) *pgxpool.Pool {
		p, err := pg.Open(ctx, url, "public", pg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	primary, replica := open(rep.PrimaryURL), open(rep.ReplicaURL)
	reads := pg.NewReads(primary, replica, slog.New(slog.DiscardHandler))
	if _, err := primary.Exec(ctx, `CREATE TABLE t (id int)`); err != nil {
		t.Fatal(err)
	}
	write := func(id int) pg.LSN {
		var lsn pg.LSN
		if _, err := primary.Exec(ctx, `INSERT INTO t VALUES ($1)`, id); err != nil {
			t.Fatal(err)
		}
		if err := primary.QueryRow(ctx, `SELECT `+pg.LSNSQL(`pg_current_wal_insert_lsn()`)).Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		return lsn
	}
	count := func(after pg.LSN) (n int, served *pgxpool.Pool) {
		if err := reads.Read(ctx, after, func(p *pgxpool.Pool) error {
			served = p
			return p.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n, served
	}

	// Caught up: the replica answers a read after the first write.
	lsn := write(1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, p := count(lsn)
		if p == replica && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never served the caught-up read (%d rows)", n)
		}
		time.Sleep(20 * time.Millisecond)
	}

	before := map[string]float64{}
	for _, pool := range []string{pg.ReadReplica, pg.ReadPrimary, pg.ReadFallback} {
		before[pool] = testutil.ToFloat64(reads.Counter(pool))
	}
	rep.PauseReplay(t)
	lsn = write(2)
	if n, p := count(lsn); p != primary || n != 2 {
		t.Errorf("read after an unreplayed write: %d rows from the primary=%v, want 2 from the primary", n, p == primary)
	}
	if n, p := count(0); p != replica || n != 1 {
		t.Errorf("read with no position: %d rows from the replica=%v, want 1 (paused) from the replica", n, p == replica)
	}
	// A store's shell routes the same way: after its caller's write to the
	// primary, without a position to the replica, without routing to its pool.
	served := func(s pg.Store) *pgxpool.Pool {
		var on *pgxpool.Pool
		if err := s.Read(ctx, func(p *pgxpool.Pool) error { on = p; return nil }); err != nil {
			t.Fatal(err)
		}
		return on
	}
	store := pg.NewStore(primary)
	if !store.WithReads(reads).Routed() || store.Routed() || store.WithReads(nil).Routed() {
		t.Errorf("Routed: with reads %v, without %v", store.WithReads(reads).Routed(), store.Routed())
	}
	if served(store.WithReads(reads).After(lsn)) != primary || served(store.WithReads(reads)) != replica ||
		served(store) != primary || served(store.After(lsn)) != primary {
		t.Errorf("the store's reads went elsewhere than its Reads would send them")
	}
	rep.ResumeReplay(t)

	rep.StopReplica()
	for range 2 { // the first fails over, the second finds it marked down
		if n, p := count(0); p != primary || n != 2 {
			t.Errorf("replica down: %d rows from the primary=%v, want 2 from the primary", n, p == primary)
		}
	}
	want := map[string]float64{pg.ReadReplica: 2, pg.ReadPrimary: 2, pg.ReadFallback: 2}
	for pool, n := range want {
		if got := testutil.ToFloat64(reads.Counter(pool)) - before[pool]; got != n {
			t.Errorf("pg_reads_total{pool=%q} moved by %v, want %v", pool, got, n)
		}
	}
}
