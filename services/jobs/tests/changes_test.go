package tests

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
)

// busWithChanges is the business layer bumping the change versions in the
// Redis at url.
func busWithChanges(t *testing.T, url string) (*jobbus.Business, *changes.Versions) {
	t.Helper()
	rdb, err := redisx.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	v := changes.New(rdb, "test:")
	dir := dirclient.New(dirURL, codec, dirclient.Options{})
	return jobbus.New(jobdb.New(pool), dir, jobbus.Config{PublicBaseURL: baseURL, DefaultInvEmail: defInv, Changes: v, TotalsMemo: true}), v
}

// Every acknowledged write has moved the versions the gateway names the
// answers by: every job's and the job's space's, not other spaces'.
func TestWritesBumpChangeVersions(t *testing.T) {
	ctx := context.Background()
	const url = "redis://127.0.0.1:6379/12" // this test's own: nothing else bumps there
	bus, v := busWithChanges(t, url)
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
	if err := v.Ensure(ctx, changes.JobsSpace(other), changes.JobsBulk); err != nil {
		t.Fatal(err)
	}
	key := liveKey(301, space)
	run := rand.Text()[:8] // a job created again would be an update of the last run's
	first := createOn(t, app, key, jobBody("Versions first "+run, 1))
	v1 := read(changes.Jobs, changes.JobsSpace(space), changes.JobsSpace(other))
	createOn(t, app, key, jobBody("Versions second "+run, 1))
	v2 := read(changes.Jobs, changes.JobsSpace(space), changes.JobsSpace(other))
	if v2[0] != v1[0]+1 || v2[1] != v1[1]+1 || v2[2] != v1[2] {
		t.Fatalf("a create in space %d moved %v → %v; want every job's and its space's by one, space %d's not", space, v1, v2, other)
	}
	if r := do(t, app, "POST", "/v2/jobs/pause", `{"job_id":`+itoa(first.JobID)+`}`, &key); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	if v3 := read(changes.Jobs, changes.JobsSpace(space)); v3[0] != v2[0]+1 || v3[1] != v2[1]+1 {
		t.Fatalf("a pause moved %v → %v", v2[:2], v3)
	}
	// A replayed Idempotency-Key bumps again (its first answer may have
	// failed to): every space's view, since the replay does not know the space.
	idemKey := "versions-replay-" + rand.Text()[:8]
	do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Versions replay", 1)), &key, "Idempotency-Key", idemKey)
	before := read(changes.JobsBulk)
	if r := do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Versions replay", 1)), &key, "Idempotency-Key", idemKey); r.Status != 201 {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	if after := read(changes.JobsBulk); after[0] != before[0]+1 {
		t.Fatalf("a replay left jobs:bulk at %d", after[0])
	}
}

// A write whose versions cannot be bumped is stored but not acknowledged:
// 503, and the same request again succeeds and bumps.
func TestWriteUnannouncedWithoutRedis(t *testing.T) {
	down, _ := busWithChanges(t, "redis://127.0.0.1:1/0")
	key := liveKey(302, 10)
	body := jobBody("Unannounced "+rand.Text()[:8], 1)
	r := do(t, appOn(down, false), "POST", "/v2/jobs", jsonBody(t, body), &key)
	if r.Status != 503 || r.Env.Error.Code != "service_unavailable" {
		t.Fatalf("write with Redis unreachable: %d %s", r.Status, r.Body)
	}
	var n int
	if err := pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE title = $1`, body["title"]).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the unacknowledged write is stored %d times (%v); want once", n, err)
	}
	up, v := busWithChanges(t, "redis://127.0.0.1:6379/12")
	before, err := v.Read(bgContext, nil, changes.Jobs)
	if err != nil && !errors.Is(err, changes.ErrMissing) {
		t.Fatal(err)
	}
	again := createOn(t, appOn(up, false), key, body)
	if again.Action != "updated" {
		t.Fatalf("the retry: action %q, want updated (the same job)", again.Action)
	}
	after, err := v.Read(bgContext, nil, changes.Jobs)
	if err != nil || (len(before) == 1 && after[0] <= before[0]) {
		t.Fatalf("the retry did not bump: %v → %v (%v)", before, after, err)
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
