package eventdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

// With DATABASE_READ_URL the events' reads (the list and the feed) are
// answered by the replica: with its replay paused, events the seed just
// wrote on the primary are not there yet; a replica that stops sends the
// reads to the primary.
func TestReadsGoToTheReplica(t *testing.T) {
	rep, primary, reads := pgtest.Routed(t, "community", migrations.FS)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	routed := eventdb.New(primary).WithReads(reads)
	f := eventbus.Filter{Now: now}

	before := testutil.ToFloat64(reads.Counter(pg.ReadReplica))
	rep.PauseReplay(t)
	if _, err := seed.LoadDemo(ctx, eventbus.New(eventdb.New(primary)), now); err != nil {
		t.Fatal(err)
	}
	want, err := eventdb.New(primary).Count(ctx, f)
	if err != nil || want == 0 {
		t.Fatalf("the primary counts %d events (%v)", want, err)
	}
	if n, err := routed.Count(ctx, f); err != nil || n != 0 {
		t.Fatalf("with replay paused the routed count is %d (%v): not read on the replica", n, err)
	}
	if evs, err := routed.Query(ctx, f, 0, 50); err != nil || len(evs) != 0 {
		t.Fatalf("with replay paused the routed page has %d events (%v)", len(evs), err)
	}
	if got := testutil.ToFloat64(reads.Counter(pg.ReadReplica)) - before; got != 2 {
		t.Fatalf("replica reads %g, want 2", got)
	}

	rep.ResumeReplay(t)
	rep.WaitReplayed(t, primary, reads)
	if n, err := routed.Count(ctx, f); err != nil || n != want {
		t.Fatalf("caught up, the routed count is %d (%v), want %d", n, err, want)
	}

	rep.StopReplica()
	if evs, err := routed.Query(ctx, f, 0, 50); err != nil || len(evs) != want {
		t.Fatalf("with the replica stopped: %d events (%v), want %d", len(evs), err, want)
	}
	if got := testutil.ToFloat64(reads.Counter(pg.ReadFallback)); got < 1 {
		t.Fatalf("fallback reads %g, want at least 1", got)
	}
}
