package postdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/internal/seed/blogseed"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

// With DATABASE_READ_URL the blog's reads (list, one post: the pages and
// the feed) are answered by the replica: with its replay paused, a post the
// seed just wrote on the primary is not there yet; a replica that stops
// sends the reads to the primary.
func TestReadsGoToTheReplica(t *testing.T) {
	rep, primary, reads := pgtest.Routed(t, "content", migrations.FS)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	posts := blogseed.Demo(now)
	routed := postdb.New(primary).WithReads(reads)

	before := testutil.ToFloat64(reads.Counter(pg.ReadReplica))
	rep.PauseReplay(t)
	if err := blogseed.Load(ctx, postbus.New(postdb.New(primary), nil), posts); err != nil {
		t.Fatal(err)
	}
	f := postbus.Filter{Limit: 50}
	listed, published, err := postdb.New(primary).List(ctx, now.Add(time.Hour), f)
	if err != nil || published == 0 {
		t.Fatalf("the primary lists %d posts (%v)", published, err)
	}
	slug := listed[0].Slug
	if _, n, err := routed.List(ctx, now.Add(time.Hour), f); err != nil || n != 0 {
		t.Fatalf("with replay paused the routed list has %d posts (%v): not read on the replica", n, err)
	}
	if _, err := routed.BySlug(ctx, now.Add(time.Hour), slug); !errors.Is(err, postbus.ErrNotFound) {
		t.Fatalf("with replay paused the routed post read gave %v, want not found", err)
	}
	if got := testutil.ToFloat64(reads.Counter(pg.ReadReplica)) - before; got != 2 {
		t.Fatalf("replica reads %g, want 2", got)
	}

	rep.ResumeReplay(t)
	rep.WaitReplayed(t, primary, reads)
	if _, n, err := routed.List(ctx, now.Add(time.Hour), f); err != nil || n != published {
		t.Fatalf("caught up, the routed list has %d posts (%v), want %d", n, err, published)
	}

	rep.StopReplica()
	if _, err := routed.BySlug(ctx, now.Add(time.Hour), slug); err != nil {
		t.Fatalf("with the replica stopped: %v", err)
	}
	if got := testutil.ToFloat64(reads.Counter(pg.ReadFallback)); got < 1 {
		t.Fatalf("fallback reads %g, want at least 1", got)
	}
}
