package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobcache"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

// TestReplicaReads runs the API with DATABASE_READ_URL on a real streaming
// replica whose replay is paused: another key's list, one-job read and the
// public feed are answered by the replica (they do not see the new job),
// while the key that wrote it sees it at once, every time (its reads go to
// the primary until the replica has replayed its write); a replica that is
// down leaves every read answered by the primary.
func TestReplicaReads(t *testing.T) {
	t.Parallel()
	rep := pgtest.Replica(t)
	primary := pgtest.Open(t, rep.PrimaryURL, pgtest.Schema{Name: "jobs", Migrations: migrations.FS})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	replica, err := pg.Open(ctx, rep.ReplicaURL, "jobs", pg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Close)
	reads := pg.NewReads(primary, replica, testLog)
	app := appOn(busOn(jobcache.New(jobdb.New(primary), jobcache.Config{Reads: reads}).Stores(), baseURL, dirURL), false)

	// Every migration replayed (the last ones add columns the reads select)
	// before the replay is paused.
	rep.WaitReplayed(t, primary, reads)

	writer, reader := liveKey(9101, 1200), liveKey(9102, 1200)
	public := identity.Identity{Kind: identity.KindPublic}
	moved := counters(reads)
	rep.PauseReplay(t)

	const city = 1901
	var ids []int64
	for i := range 3 {
		// Read-your-writes without a sleep: each new job in the writer's
		// very next one-job read and filtered list.
		cr := createOn(t, app, writer, jobBody(fmt.Sprintf("Replica %d", i), city))
		ids = append(ids, cr.JobID)
		if r := do(t, app, "GET", "/v2/jobs/"+strconv.FormatInt(cr.JobID, 10), "", &writer); r.Status != 200 {
			t.Fatalf("the writer's read of its job %d: %d %s", cr.JobID, r.Status, r.Body)
		}
		if got := listIDs(t, app, "/v2/jobs?city=city-"+strconv.Itoa(city), writer); len(got) != i+1 {
			t.Fatalf("the writer's list after %d creates: %v", i+1, got)
		}
	}
	if got := moved(pg.ReadPrimary); got != 6 {
		t.Errorf("the writer's reads: pg_reads_total{pool=primary} moved by %v, want 6", got)
	}

	// Another key and the public feed read the paused replica: no new job.
	if r := do(t, app, "GET", "/v2/jobs/"+strconv.FormatInt(ids[0], 10), "", &reader); r.Status != 404 {
		t.Errorf("another key's read of job %d on the paused replica: %d, want 404", ids[0], r.Status)
	}
	if got := listIDs(t, app, "/v2/jobs?city=city-"+strconv.Itoa(city), reader); len(got) != 0 {
		t.Errorf("another key's list on the paused replica: %v, want none", got)
	}
	if r := do(t, app, "GET", "/v2/vine/jobs", "", &public); r.Status != 200 || containsID(string(r.Body), ids[0]) {
		t.Errorf("the feed on the paused replica: %d, or it lists job %d", r.Status, ids[0])
	}
	if got := moved(pg.ReadReplica); got != 3 {
		t.Errorf("pg_reads_total{pool=replica} moved by %v, want 3", got)
	}

	// Replay resumed, the replica catches up and answers everyone.
	rep.ResumeReplay(t)
	for deadline := time.Now().Add(10 * time.Second); len(listIDs(t, app, "/v2/jobs?city=city-"+strconv.Itoa(city), reader)) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the replica never caught up")
		}
	}
	before := moved(pg.ReadReplica)
	if r := do(t, app, "GET", "/v2/jobs/"+strconv.FormatInt(ids[0], 10), "", &writer); r.Status != 200 || moved(pg.ReadReplica) != before+1 {
		t.Errorf("the writer's read once the replica has replayed its write: %d, from the replica: %v", r.Status, moved(pg.ReadReplica) == before+1)
	}

	// The replica down: reads answer 200 from the primary.
	rep.StopReplica()
	for _, id := range []identity.Identity{reader, writer} {
		if got := listIDs(t, app, "/v2/jobs?city=city-"+strconv.Itoa(city), id); len(got) != 3 {
			t.Errorf("key %d's list with the replica down: %v", id.KeyID, got)
		}
		if r := do(t, app, "GET", "/v2/jobs/"+strconv.FormatInt(ids[1], 10), "", &id); r.Status != 200 {
			t.Errorf("key %d's read with the replica down: %d %s", id.KeyID, r.Status, r.Body)
		}
	}
	if r := do(t, app, "GET", "/v2/vine/jobs", "", &public); r.Status != 200 {
		t.Errorf("the feed with the replica down: %d", r.Status)
	}
	if got := moved(pg.ReadFallback); got != 5 {
		t.Errorf("pg_reads_total{pool=fallback} moved by %v, want 5", got)
	}
}

// counters returns how far each pg_reads_total series has moved since.
func counters(reads *pg.Reads) func(pool string) float64 {
	start := map[string]float64{}
	for _, p := range []string{pg.ReadReplica, pg.ReadPrimary, pg.ReadFallback} {
		start[p] = testutil.ToFloat64(reads.Counter(p))
	}
	return func(pool string) float64 { return testutil.ToFloat64(reads.Counter(pool)) - start[pool] }
}

func listIDs(t *testing.T, app *fiber.App, path string, id identity.Identity) []int64 {
	t.Helper()
	r := do(t, app, "GET", path, "", &id)
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var d listData
	r.data(t, &d)
	ids := []int64{}
	for _, j := range d.Jobs {
		ids = append(ids, int64(j["id_job"].(float64)))
	}
	return ids
}

func containsID(body string, id int64) bool {
	return strings.Contains(body, `"job:`+strconv.FormatInt(id, 10)+`"`)
}
