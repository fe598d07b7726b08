package eventdb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_eventdb", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 5}}, pgtest.SetPool(&pool)))
}

// events writes n events of job (space) and returns their ids in order.
func events(t *testing.T, job, space int64, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		var id string
		if err := pool.QueryRow(context.Background(), `INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
			VALUES ($1, 'job.updated', $2, 'active', 'active', $3, 1) RETURNING id::text`, job, i+1, space).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// A reader reads its events in order in batches from its own position;
// a failing batch pauses it (no other reader held) and is read again,
// whole and in order, once the pause is over; a runner whose reader was
// claimed by another can no longer move the position.
func TestRunnerReadsInOrderPausesAndIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := eventdb.New(pool)
	// Both readers start at the horizon: they read what commits from now on.
	for _, r := range []string{"test:a", "test:b"} {
		l, _, err := store.Claim(ctx, r, "setup", time.Minute, true)
		if err != nil {
			t.Fatal(err)
		}
		_ = store.Release(ctx, l)
	}
	want := events(t, 9101, 9101, 7)
	events(t, 9102, 9102, 3) // another space's: left out by the filter
	filter := eventbus.Filter{Audience: &jobbus.Audience{SpaceID: 9101, KeyID: 1}, Types: []string{"job.updated"}}
	var gotA, gotB []string
	failA := true
	runA := &eventbus.Runner{Store: store, Reader: "test:a", Filter: filter, Batch: 3, Handle: func(_ context.Context, evs []jobbus.JobEvent) error {
		if failA && len(gotA) >= 3 {
			return errors.New("the receiver is down")
		}
		for _, e := range evs {
			gotA = append(gotA, e.ID)
		}
		return nil
	}}
	runB := &eventbus.Runner{Store: store, Reader: "test:b", Filter: filter, Batch: 3, Handle: func(_ context.Context, evs []jobbus.JobEvent) error {
		for _, e := range evs {
			gotB = append(gotB, e.ID)
		}
		return nil
	}}
	// The events are committed; wait until the horizon is past them
	// (other tests' transactions may hold it back a moment).
	for deadline := time.Now().Add(10 * time.Second); len(gotB) < len(want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("reader b got %d of %d", len(gotB), len(want))
		}
		if _, err := runB.Run(ctx, "b"); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(gotB, want) {
		t.Fatalf("reader b: %v, want %v", gotB, want)
	}
	out, err := runA.Run(ctx, "a")
	if err != nil || out.Paused == nil || !slices.Equal(gotA, want[:3]) {
		t.Fatalf("reader a: %+v %v, got %v", out, err, gotA)
	}
	st, err := store.State(ctx, "test:a")
	if err != nil || st.Failures != 1 || st.PausedUntil == nil {
		t.Fatalf("paused state: %+v %v", st, err)
	}
	// Paused: a run does nothing until the pause is over.
	failA = false
	if out, err := runA.Run(ctx, "a"); err != nil || out.Handled != 0 || out.Paused == nil {
		t.Fatalf("during the pause: %+v %v", out, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE event_readers SET paused_until = now() WHERE reader = 'test:a'`); err != nil {
		t.Fatal(err)
	}
	if out, err := runA.Run(ctx, "a"); err != nil || out.Paused != nil || !slices.Equal(gotA, want) {
		t.Fatalf("after the pause: %+v %v, got %v", out, err, gotA)
	}
	if st, _ := store.State(ctx, "test:a"); st.Failures != 0 {
		t.Fatalf("failures kept: %+v", st)
	}

	// Fencing: a runner presumed dead and replaced moves nothing.
	old, st, err := store.Claim(ctx, "test:a", "old", time.Minute, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Claim(ctx, "test:a", "new", time.Minute, true); err != nil {
		t.Fatal(err)
	}
	// A runner that does not take (a loop, not a Temporal activity) finds
	// the live lease held.
	if _, _, err := store.Claim(ctx, "test:a", "a loop", time.Minute, false); !errors.Is(err, eventbus.ErrFenced) {
		t.Fatalf("a held reader claimed without take: %v", err)
	}
	back := jobbus.Cursor{XID: st.Position.XID + 1000, Seq: 1}
	for name, err := range map[string]error{
		"advance": store.Advance(ctx, old, back),
		"renew":   store.Renew(ctx, old, time.Minute),
		"pause":   store.Pause(ctx, old, time.Now().Add(time.Hour), "x"),
	} {
		if !errors.Is(err, eventbus.ErrFenced) {
			t.Errorf("%s by the fenced runner: %v", name, err)
		}
	}
	if now, _ := store.State(ctx, "test:a"); now.Position.XID != st.Position.XID || now.Position.Seq != st.Position.Seq || now.PausedUntil != nil {
		t.Fatalf("the fenced runner moved the reader: %+v → %+v", st, now)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 10: eventbus.MaxBackoff, 99: eventbus.MaxBackoff} {
		if got := eventbus.Backoff(n); got != want {
			t.Errorf("%s: %v, want %v", fmt.Sprint(n), got, want)
		}
	}
}
