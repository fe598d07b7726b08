package jobdb

import (
	"context"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// spaceEvents reads the events of space's jobs page by page, as a mirror
// does, until it has want of them (or a while has passed): the horizon is
// the whole server's, which other tests' transactions hold back a moment.
func spaceEvents(t *testing.T, s *Store, space int64, want int) []jobbus.JobEvent {
	t.Helper()
	var all []jobbus.JobEvent
	var cur jobbus.Cursor
	for deadline := time.Now().Add(20 * time.Second); len(all) < want && time.Now().Before(deadline); {
		evs, _, next, err := s.EventsAfter(context.Background(), &jobbus.Audience{SpaceID: space}, cur, time.Time{}, 2)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		cur = next
		if len(evs) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return all
}

func types(evs []jobbus.JobEvent) (out []string) {
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// Each write of a job writes one event with the job's new version, in the
// same statement; an unchanged re-post writes none; the expiry worker's
// expiries write job.expired.
func TestEventsOfUpsertEditAndExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(pool)
	const space = 9101
	nj := newJob("Evented Host", space, 0)
	nj.Status = jobbus.StatusActive
	w, err := s.Upsert(ctx, nj)
	if err != nil || !w.Inserted {
		t.Fatalf("insert: %+v %v", w, err)
	}
	if _, err := s.Upsert(ctx, nj); err != nil { // unchanged: no event
		t.Fatal(err)
	}
	changed := nj
	changed.Description = "<p>Host our members and the events</p>"
	if _, err := s.Upsert(ctx, changed); err != nil {
		t.Fatal(err)
	}
	d, err := s.QueryByID(ctx, w.JobID, jobbus.Reader{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(ctx, w.JobID, jobbus.Edited{Title: d.Title, Company: d.Company, Description: "<p>Edited</p>",
		JobType: d.JobType, Tags: d.Tags, Slug: d.Slug, Currency: d.Currency, Fingerprint: nj.Fingerprint}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = now() - interval '1 minute' WHERE id = $1`, w.JobID); err != nil {
		t.Fatal(err)
	}
	if expired, _, _, _, err := s.ExpireIfDue(ctx, w.JobID); err != nil || !expired {
		t.Fatalf("expire: %v %v", expired, err)
	}
	if expired, _, _, _, err := s.ExpireIfDue(ctx, w.JobID); err != nil || expired { // already expired: nothing
		t.Fatalf("expire again: %v %v", expired, err)
	}

	// The sweep's expiries too.
	other := newJob("Swept Host", space, 0)
	other.Status = jobbus.StatusActive
	w2, err := s.Upsert(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = now() - interval '1 minute' WHERE id = $1`, w2.JobID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ExpireOverdue(ctx, 1000); err != nil || n < 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}

	evs := spaceEvents(t, s, space, 6)
	want := []struct {
		job        int64
		typ        string
		version    int64
		status     string
		prevStatus string
	}{
		{w.JobID, jobbus.TypeCreated, 1, "active", ""},
		{w.JobID, jobbus.TypeUpdated, 2, "active", "active"},
		{w.JobID, jobbus.TypeUpdated, 3, "active", "active"},
		{w.JobID, jobbus.TypeExpired, 4, "expired", "active"},
		{w2.JobID, jobbus.TypeCreated, 1, "active", ""},
		{w2.JobID, jobbus.TypeExpired, 2, "expired", "active"},
	}
	if len(evs) != len(want) {
		t.Fatalf("events: %v, want %d", types(evs), len(want))
	}
	ids := map[string]bool{}
	for i, e := range evs {
		wn := want[i]
		if e.JobID != wn.job || e.Type != wn.typ || e.Version != wn.version || e.Status != wn.status || e.PrevStatus != wn.prevStatus ||
			e.SpaceID != space {
			t.Errorf("event %d: %+v, want %+v", i, e, wn)
		}
		if ids[e.ID] || e.ID == "" {
			t.Errorf("event %d: id %q not unique", i, e.ID)
		}
		ids[e.ID] = true
	}
	var version int64
	if err := pool.QueryRow(ctx, `SELECT version FROM jobs WHERE id = $1`, w.JobID).Scan(&version); err != nil || version != 4 {
		t.Fatalf("job version %d %v, want 4", version, err)
	}
}

// The feed's order is the commit order, not the order sequence numbers
// or clocks were taken in: transaction A writes first (lower seq, earlier
// time) and commits after B. A reader going past B while A is open must
// not skip A, which a cursor on seq or on occurred_at would do.
func TestEventsFeedSkipsNothingAcrossConcurrentCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(pool)
	const space = 9102
	aud := &jobbus.Audience{SpaceID: space}
	if _, err := s.Upsert(ctx, newJob("Feed Seed", space, 0)); err != nil {
		t.Fatal(err)
	}
	var cur jobbus.Cursor
	for deadline := time.Now().Add(20 * time.Second); ; {
		evs, _, next, err := s.EventsAfter(ctx, aud, jobbus.Cursor{}, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 {
			cur = next
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the seed's event never came")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A: open, its event written, not committed.
	txA, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = txA.Rollback(ctx) }()
	a := &Store{pool: pool, db: txA, plans: s.plans}
	wA, err := a.Upsert(ctx, newJob("Feed Seed Alpha", space, 0))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// B: starts later, commits first.
	wB, err := s.Upsert(ctx, newJob("Feed Seed Bravo", space, 0))
	if err != nil {
		t.Fatal(err)
	}

	// What the naive cursors would have done: B is visible and past A in
	// both seq and time.
	var seqA, seqB int64
	var atA, atB time.Time
	if err := pool.QueryRow(ctx, `SELECT seq, occurred_at FROM job_events WHERE job_id = $1`, wB.JobID).Scan(&seqB, &atB); err != nil {
		t.Fatal(err)
	}
	if err := txA.QueryRow(ctx, `SELECT seq, occurred_at FROM job_events WHERE job_id = $1`, wA.JobID).Scan(&seqA, &atA); err != nil {
		t.Fatal(err)
	}
	if seqA >= seqB || !atA.Before(atB) {
		t.Fatalf("the test needs A before B in seq and time: %d %v, %d %v", seqA, atA, seqB, atB)
	}
	// While A is open the feed waits below it: B is not served yet.
	evs, _, cur2, err := s.EventsAfter(ctx, aud, cur, time.Time{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 0 {
		t.Fatalf("served %v while an earlier transaction is open", types(evs))
	}
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A seq or a time cursor at B finds nothing after it: A would be lost.
	var naive int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_events WHERE space_id = $1 AND (seq > $2 OR occurred_at > $3)`,
		space, seqB, atB).Scan(&naive); err != nil || naive != 0 {
		t.Fatalf("a seq or time cursor at B would find %d events after it: %v", naive, err)
	}

	// The horizon is the whole server's (other tests' transactions hold it
	// back for a moment), so the reader follows the feed as a mirror does.
	var got []int64
	cur = cur2
	for deadline := time.Now().Add(20 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		evs, _, next, err := s.EventsAfter(ctx, aud, cur, time.Time{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			got = append(got, e.JobID)
		}
		cur = next
		if len(evs) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(got) != 2 || !(got[0] == wA.JobID && got[1] == wB.JobID || got[0] == wB.JobID && got[1] == wA.JobID) {
		t.Fatalf("after both commits the feed gave %v, want A (%d) and B (%d)", got, wA.JobID, wB.JobID)
	}
}

// A page of events comes with its jobs as they are now, read in the same
// statement, each as QueryByIDs reads it; a gone job's event comes alone.
func TestEventsComeWithTheirJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(pool)
	const space = 9107
	nj := newJob("Joined Host", space, 0)
	nj.Status = jobbus.StatusActive
	w, err := s.Upsert(ctx, nj)
	if err != nil {
		t.Fatal(err)
	}
	gone := newJob("Gone Host", space, 0)
	gone.Status = jobbus.StatusActive
	g, err := s.Upsert(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, g.JobID); err != nil {
		t.Fatal(err)
	}
	want, err := s.QueryByIDs(ctx, []int64{w.JobID})
	if err != nil || len(want) != 1 {
		t.Fatalf("%v %v", want, err)
	}
	var evs []jobbus.JobEvent
	var jobs []jobbus.Detail
	var cur jobbus.Cursor
	for deadline := time.Now().Add(20 * time.Second); len(evs) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		e, j, next, err := s.EventsAfter(ctx, &jobbus.Audience{SpaceID: space}, cur, time.Time{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		evs, jobs, cur = append(evs, e...), append(jobs, j...), next
	}
	if len(evs) != 2 || len(jobs) != 1 {
		t.Fatalf("%d events, %d jobs", len(evs), len(jobs))
	}
	got := jobs[0]
	if got.ID != want[0].ID || got.Title != want[0].Title || got.Description != want[0].Description || got.Version != want[0].Version ||
		got.Plan != want[0].Plan || !got.UpdatedAt.Equal(want[0].UpdatedAt) || got.HashIdentifier != want[0].HashIdentifier || got.Status != want[0].Status {
		t.Fatalf("joined %+v, want %+v", got, want[0])
	}
}
