package jobdb

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// newJob is a valid job to upsert, of owner (0: its space's) in space.
func newJob(title string, space, owner int64) jobbus.NewJob {
	from, to, refresh := jobbus.UpdateMoves(false)
	return jobbus.NewJob{Title: title, Company: "Upsert Coworking", Description: "<p>Host our members</p>",
		JobType: "fulltime", Tags: "community,events", Slug: "upsert", ExternalURL: "https://e.example/" + title,
		City:    jobbus.City{ID: 1, Name: "Berlin", Slug: "berlin", Confirmed: true, Lat: 52.5, Lon: 13.4, CountryCode: "DE"},
		SpaceID: space, KeyID: 7, OwnerKeyID: owner, Currency: "EUR", InvEmail: "a@b.example",
		Plan: jobbus.Plan{ID: 5, Name: "Free", ExpirationDays: 30, Active: true}, Status: jobbus.StatusDraft,
		UpdateFrom: from, UpdateTo: to, Refresh: refresh,
		Fingerprint: jobbus.Fingerprint(title, "Upsert Coworking", 1, "https://e.example/"+title), HashIdentifier: newHashForTest(title, owner)}
}

func newHashForTest(title string, owner int64) string {
	h := jobbus.Fingerprint(title, strconv.FormatInt(owner, 10), 0, "")
	return h[:32]
}

// rowVersion is the job's xmin and its outbox rows: what a write leaves.
func rowVersion(t testing.TB, id int64) (xmin string, outbox int) {
	t.Helper()
	ctx := context.Background()
	if err := pool.QueryRow(ctx, `SELECT xmin::text FROM jobs WHERE id = $1`, id).Scan(&xmin); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM expiry_outbox WHERE job_id = $1`, id).Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	return xmin, outbox
}

// An unchanged match is answered as it is and writes nothing; a changed one
// is updated; the same fingerprint of another owner is another job.
func TestUpsertMatchesOwnJobsAndSkipsUnchanged(t *testing.T) {
	ctx := context.Background()
	s := New(pool)
	nj := newJob("Unchanged Host", 0, 41)
	first, err := s.Upsert(ctx, nj)
	if err != nil || !first.Inserted {
		t.Fatalf("insert: %+v %v", first, err)
	}
	xmin, outbox := rowVersion(t, first.JobID)

	again := nj
	again.HashIdentifier = newHashForTest("other", 1)
	w, err := s.Upsert(ctx, again)
	if err != nil || w.Inserted || w.JobID != first.JobID || w.HashIdentifier != first.HashIdentifier || w.Status != first.Status {
		t.Fatalf("unchanged match: %+v %v", w, err)
	}
	if x, o := rowVersion(t, first.JobID); x != xmin || o != outbox {
		t.Fatalf("an unchanged match wrote: xmin %s → %s, outbox %d → %d", xmin, x, outbox, o)
	}

	changed := again
	changed.Description = "<p>Host our members, and the events</p>"
	if w, err = s.Upsert(ctx, changed); err != nil || w.Inserted || w.JobID != first.JobID {
		t.Fatalf("changed match: %+v %v", w, err)
	}
	if x, _ := rowVersion(t, first.JobID); x == xmin {
		t.Fatal("a changed match wrote no row version")
	}

	other := newJob("Unchanged Host", 0, 42)
	if w, err = s.Upsert(ctx, other); err != nil || !w.Inserted || w.JobID == first.JobID {
		t.Fatalf("another owner's post of the fingerprint: %+v %v", w, err)
	}
}

// BenchmarkUpsertUnchanged is a platform re-sending an unchanged job (make
// bench row e2's statement): the match read, nothing written.
func BenchmarkUpsertUnchanged(b *testing.B) {
	ctx := context.Background()
	s := New(pool)
	nj := newJob("Bench Unchanged", 0, 43)
	if _, err := s.Upsert(ctx, nj); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if w, err := s.Upsert(ctx, nj); err != nil || w.Inserted {
			b.Fatalf("%+v %v", w, err)
		}
	}
}

// BenchmarkUpsertCreate is a new job each time (make bench row d's statement).
func BenchmarkUpsertCreate(b *testing.B) {
	ctx := context.Background()
	s := New(pool)
	run, i := strconv.FormatInt(time.Now().UnixNano(), 36), 0
	for b.Loop() {
		i++
		nj := newJob("Bench Create "+run+" "+strconv.Itoa(i), 0, 44)
		if w, err := s.Upsert(ctx, nj); err != nil || !w.Inserted {
			b.Fatalf("%+v %v", w, err)
		}
	}
}

// A create runs with generic plans (upsertGeneric) and leaves its
// connection's setting as it was, whether the statement succeeds or fails:
// the next statement on that connection, a search say, plans as before.
func TestCreatePlanSettingDoesNotLeak(t *testing.T) {
	ctx := context.Background()
	cfg := pool.Config()
	cfg.MaxConns = 1 // every statement below on the same connection
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	setting := func() string {
		t.Helper()
		var v string
		if err := one.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	s := New(one)
	if w, err := s.Upsert(ctx, newJob("Plan Setting Host", 0, 43)); err != nil || !w.Inserted {
		t.Fatalf("create: %+v %v", w, err)
	}
	if v := setting(); v != "auto" {
		t.Fatalf("after a create plan_cache_mode is %q, want auto", v)
	}
	bad := newJob("Plan Setting Refused", 0, 43)
	bad.Status = "bogus" // refused by the status check: the statement fails
	if _, err := s.Upsert(ctx, bad); err == nil {
		t.Fatal("a job of status bogus was stored")
	}
	if v := setting(); v != "auto" {
		t.Fatalf("after a failed create plan_cache_mode is %q, want auto", v)
	}
}
