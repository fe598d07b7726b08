package tests

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobcache"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
)

// busWithChanges is the business layer bumping the change versions in the
// Redis at url.
func busWithChanges(t *testing.T, url string) (*jobbus.Business, *changes.Versions, *jobcache.Store) {
	t.Helper()
	rdb, err := redisx.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	v := changes.New(rdb, "test:")
	dir := dirclient.New(dirURL, codec, dirclient.Options{})
	store := jobcache.New(jobdb.New(pool), jobcache.Config{Changes: v, TotalsMemo: true})
	return jobbus.New(store.Stores(), dir, jobbus.Config{PublicBaseURL: baseURL, DefaultInvEmail: defInv}), v, store
}

// Every acknowledged write has moved the versions the gateway names the
// answers by: every job's and the job's space's, not other spaces'.
func TestWritesBumpChangeVersions(t *testing.T) {
	ctx := context.Background()
	const url = "redis://127.0.0.1:6379/12" // this test's own: nothing else bumps there
	bus, v, _ := busWithChanges(t, url)
	rdbFlush(t, url)
	app := appOn(bus, false)
	read := func(scopes ...string) []uint64 {
		t.Helper()
		vs, err := v.Read(ctx, nil, scopes...)
		if err != nil {
			t.Fatalf("read %v: %v", scopes, err)
		}
		return vs
	}
	const space, other = 10, 11
	if err := v.Ensure(ctx, scopes.JobsSpace(other), scopes.JobsBulk); err != nil {
		t.Fatal(err)
	}
	key := liveKey(301, space)
	run := rand.Text()[:8] // a job created again would be an update of the last run's
	first := createOn(t, app, key, jobBody("Versions first "+run, 1))
	v1 := read(scopes.Jobs, scopes.JobsSpace(space), scopes.JobsSpace(other))
	createOn(t, app, key, jobBody("Versions second "+run, 1))
	v2 := read(scopes.Jobs, scopes.JobsSpace(space), scopes.JobsSpace(other))
	if v2[0] != v1[0]+1 || v2[1] != v1[1]+1 || v2[2] != v1[2] {
		t.Fatalf("a create in space %d moved %v → %v; want every job's and its space's by one, space %d's not", space, v1, v2, other)
	}
	if r := do(t, app, "POST", "/v2/jobs/pause", `{"job_id":`+itoa(first.JobID)+`}`, &key); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	if v3 := read(scopes.Jobs, scopes.JobsSpace(space)); v3[0] != v2[0]+1 || v3[1] != v2[1]+1 {
		t.Fatalf("a pause moved %v → %v", v2[:2], v3)
	}
	// A replayed Idempotency-Key and an unchanged re-post write nothing and,
	// with nothing owed (TestWriteUnannouncedWithoutRedis), bump nothing.
	idemKey := "versions-replay-" + rand.Text()[:8]
	do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Versions replay "+run, 1)), &key, "Idempotency-Key", idemKey)
	all := []string{scopes.Jobs, scopes.JobsSpace(space), scopes.JobsBulk}
	before := read(all...)
	if r := do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Versions replay "+run, 1)), &key, "Idempotency-Key", idemKey); r.Status != 201 {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	if again := createOn(t, app, key, jobBody("Versions second "+run, 1)); again.Action != "updated" {
		t.Fatalf("unchanged re-post: %q", again.Action)
	}
	if after := read(all...); after[0] != before[0] || after[1] != before[1] || after[2] != before[2] {
		t.Fatalf("a replay or an unchanged re-post moved %v → %v", before, after)
	}
}

// A write whose versions cannot be bumped (Redis away) is stored and
// acknowledged, and it is owed an announcement: once Redis answers, Settle
// (the jobs API's loop, every second) or the same request again (an
// unchanged re-post, or a replay of its Idempotency-Key) makes it: the
// space's view and every job's move, and nothing is owed any more.
func TestWriteUnannouncedWithoutRedis(t *testing.T) {
	for _, idem := range []bool{false, true} {
		down, _, _ := busWithChanges(t, "redis://127.0.0.1:1/0")
		const space = 10
		key := liveKey(302, space)
		body := jobBody("Unannounced "+rand.Text()[:8], 1)
		var hdr []string
		if idem {
			hdr = []string{"Idempotency-Key", "unannounced-" + rand.Text()[:8]}
		}
		r := do(t, appOn(down, false), "POST", "/v2/jobs", jsonBody(t, body), &key, hdr...)
		if r.Status != 201 {
			t.Fatalf("write with Redis unreachable: %d %s; want it answered, its announcement owed", r.Status, r.Body)
		}
		var n, owed int
		if err := pool.QueryRow(bgContext, `SELECT count(*), (SELECT count(*) FROM unannounced WHERE space_id = $2) FROM jobs WHERE title = $1`,
			body["title"], space).Scan(&n, &owed); err != nil || n != 1 || owed != 1 {
			t.Fatalf("the write is stored %d times, owed %d (%v); want once, owed", n, owed, err)
		}
		up, v, store := busWithChanges(t, "redis://127.0.0.1:6379/12")
		scopes := []string{scopes.Jobs, scopes.JobsSpace(space)}
		if err := v.Ensure(bgContext, scopes...); err != nil {
			t.Fatal(err)
		}
		before, err := v.Read(bgContext, nil, scopes...)
		if err != nil && !errors.Is(err, changes.ErrMissing) {
			t.Fatal(err)
		}
		if idem {
			r = do(t, appOn(up, false), "POST", "/v2/jobs", jsonBody(t, body), &key, hdr...)
			if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("the retry: %d %v %s", r.Status, r.Header, r.Body)
			}
		} else if err := store.Settle(bgContext); err != nil {
			t.Fatalf("settle: %v", err)
		}
		after, err := v.Read(bgContext, nil, scopes...)
		if err != nil || after[0] <= before[0] || after[1] <= before[1] {
			t.Fatalf("the retry (Idempotency-Key %v) or Settle did not announce the write: %v → %v (%v)", idem, before, after, err)
		}
		if err := pool.QueryRow(bgContext, `SELECT count(*) FROM unannounced`).Scan(&owed); err != nil || owed != 0 {
			t.Fatalf("still owed: %d (%v)", owed, err)
		}
	}
}

func rdbFlush(t *testing.T, url string) {
	t.Helper()
	rdb, err := redisx.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}
