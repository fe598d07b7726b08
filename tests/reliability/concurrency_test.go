package reliability

import (
	"fmt"
	"sync"
	"testing"
)

// parallel runs fn(i) for i in [0, n) from n goroutines released at once.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

const racers = 40

// N parallel creates with one Idempotency-Key through the gateway: one job,
// every 201 carries byte-identical bodies, the others are 409 conflict (the
// first is still in flight), and a later retry replays the same bytes.
// services/jobs/tests/concurrency_test.go proves the same inside the jobs
// service; this proves it survives the gateway's proxying.
func TestParallelCreatesOneIdempotencyKey(t *testing.T) {
	k := key(t, space1Key)
	title := "Idempotent race " + t.Name() + " " + randomSuffix()
	body := []byte(jobBody(title))
	idem := "race-" + randomSuffix()
	var mu sync.Mutex
	bodies := map[string]int{}
	statuses := map[int]int{}
	parallel(racers, func(int) {
		r := send("POST", shared.URL["gateway"]+"/v2/jobs", body, "X-API-Key", k, "Idempotency-Key", idem)
		mu.Lock()
		defer mu.Unlock()
		statuses[r.status]++
		switch {
		case r.envelopeProblem() != "":
			t.Errorf("not an envelope: %s", r)
		case r.status == 201:
			bodies[string(r.raw)]++
		case r.status != 409 || r.code() != "conflict":
			t.Errorf("unexpected answer: %s", r)
		}
	})
	if len(bodies) != 1 || statuses[201] == 0 {
		t.Fatalf("want one distinct 201 body; got %d distinct, statuses %v", len(bodies), statuses)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE title = $1`, title); n != 1 {
		t.Fatalf("%d jobs for one Idempotency-Key", n)
	}
	again := send("POST", shared.URL["gateway"]+"/v2/jobs", body, "X-API-Key", k, "Idempotency-Key", idem)
	for b := range bodies {
		if again.status != 201 || string(again.raw) != b || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after the race does not replay: %s", again)
		}
	}
}

// N parallel creates of one fingerprint (no Idempotency-Key): one job, one
// "created" and the rest "updated", all naming the same job_id.
func TestParallelCreatesOneFingerprint(t *testing.T) {
	k := key(t, space1Key)
	title := "Fingerprint race " + randomSuffix()
	body := []byte(jobBody(title))
	var mu sync.Mutex
	ids := map[int64]int{}
	actions := map[string]int{}
	parallel(racers, func(int) {
		r := send("POST", shared.URL["gateway"]+"/v2/jobs", body, "X-API-Key", k)
		if r.status != 201 {
			t.Errorf("create: %s", r)
			return
		}
		var cr createResult
		if err := jsonInto(r, &cr); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		ids[cr.JobID]++
		actions[cr.Action]++
		mu.Unlock()
	})
	if len(ids) != 1 || actions["created"] != 1 || actions["updated"] != racers-1 {
		t.Fatalf("job ids %v, actions %v", ids, actions)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE title = $1`, title); n != 1 {
		t.Fatalf("%d jobs for one fingerprint", n)
	}
}

// N parallel unpublishes of one job: exactly one "unpublished", every other
// answer "already_unpublished", all with status expired; the row is kept.
func TestParallelUnpublishOneJob(t *testing.T) {
	k := key(t, space1Key)
	r := do(t, "POST", shared.URL["gateway"]+"/v2/jobs", jobBody("Unpublish race "+randomSuffix()), "X-API-Key", k)
	var cr createResult
	r.into(t, &cr)
	if r.status != 201 {
		t.Fatalf("create: %s", r)
	}
	body := []byte(fmt.Sprintf(`{"job_id":%d}`, cr.JobID))
	var mu sync.Mutex
	actions := map[string]int{}
	parallel(racers, func(int) {
		r := send("POST", shared.URL["gateway"]+"/v2/jobs/unpublish", body, "X-API-Key", k)
		var res struct{ Action, Status string }
		if r.status != 200 || jsonInto(r, &res) != nil || res.Status != "expired" {
			t.Errorf("unpublish: %s", r)
			return
		}
		mu.Lock()
		actions[res.Action]++
		mu.Unlock()
	})
	if actions["unpublished"] != 1 || actions["already_unpublished"] != racers-1 {
		t.Fatalf("actions %v", actions)
	}
	if n := count(t, db, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND status = 'expired'`, cr.JobID); n != 1 {
		t.Fatal("unpublished job not kept as expired")
	}
}
