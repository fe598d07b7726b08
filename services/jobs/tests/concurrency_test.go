package tests

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestIdempotency(t *testing.T) {
	t.Parallel()
	key := liveKey(200, 10)
	body := jsonBody(t, jobBody("Idempotent Manager", 1))

	first := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", "abc-1")
	if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.Status, first.Header, first.Body)
	}
	// Whitespace and key order do not make a different request.
	again := do(t, appFlat, "POST", "/v2/jobs", "  "+body+"\n", &key, "Idempotency-Key", "abc-1")
	if again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replay: %d %v\n%s\n%s", again.Status, again.Header, again.Body, first.Body)
	}

	t.Run("create422SameKeyDifferentBody", func(t *testing.T) {
		b := jobBody("Idempotent Manager", 1)
		b["tags"] = "other"
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key, "Idempotency-Key", "abc-1")
		if r.Status != 422 || !r.hasDetail("Idempotency-Key was already used with a different request body") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("create201SameKeyOtherAPIKeyIsIndependent", func(t *testing.T) {
		other := liveKey(201, 10)
		r := do(t, appFlat, "POST", "/v2/jobs", body, &other, "Idempotency-Key", "abc-1")
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
	})
	t.Run("create422KeyTooLong", func(t *testing.T) {
		r := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", strings.Repeat("k", 201))
		if r.Status != 422 || !r.hasDetail("Idempotency-Key must be at most 200 characters") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("create422KeyNotText", func(t *testing.T) {
		for _, k := range []string{"k\xff\xfe", "k\x01"} {
			r := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", k)
			if r.Status != 422 || !r.hasDetail("Idempotency-Key must be printable UTF-8 text") {
				t.Fatalf("%q: %d %s", k, r.Status, r.Body)
			}
		}
	})
	t.Run("create201ExpiredKeyIsReusable", func(t *testing.T) {
		r := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", "old-key")
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if _, err := pool.Exec(bgContext, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE idem_key = 'old-key'`); err != nil {
			t.Fatal(err)
		}
		b := jobBody("Idempotent Manager", 1)
		b["tags"] = "new body after expiry"
		r = do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key, "Idempotency-Key", "old-key")
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
		}
	})
}

// fifty runs fn from 50 goroutines at once.
func fifty(fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			fn(i)
		}(i)
	}
	close(start)
	wg.Wait()
}

func TestConcurrentIdempotencyKey(t *testing.T) {
	t.Parallel()
	key := liveKey(210, 10)
	body := jsonBody(t, jobBody("Concurrent Idem", 1001))
	var mu sync.Mutex
	bodies := map[string]int{}
	statuses := map[int]int{}
	fifty(func(int) {
		r := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", "race-1")
		mu.Lock()
		defer mu.Unlock()
		statuses[r.Status]++
		if r.Status == 201 {
			bodies[string(r.Body)]++
		} else if r.Status != 409 || r.Env.Error.Code != "conflict" {
			t.Errorf("unexpected %d %s", r.Status, r.Body)
		}
	})
	if len(bodies) != 1 || statuses[201] == 0 {
		t.Fatalf("want one distinct 201 body, got %d bodies, statuses %v", len(bodies), statuses)
	}
	var n int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE city_id = 1001`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d jobs", n)
	}
	// After the race every retry replays the one answer.
	r := do(t, appFlat, "POST", "/v2/jobs", body, &key, "Idempotency-Key", "race-1")
	for b := range bodies {
		if r.Status != 201 || string(r.Body) != b || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s", r.Status, r.Body)
		}
	}
}

func TestConcurrentFingerprint(t *testing.T) {
	t.Parallel()
	key := liveKey(220, 10)
	body := jsonBody(t, jobBody("Concurrent Fingerprint", 1002))
	var mu sync.Mutex
	ids := map[int64]int{}
	actions := map[string]int{}
	fifty(func(int) {
		r := do(t, appFlat, "POST", "/v2/jobs", body, &key)
		if r.Status != 201 {
			t.Errorf("%d %s", r.Status, r.Body)
			return
		}
		var cr createResult
		r.data(t, &cr)
		mu.Lock()
		ids[cr.JobID]++
		actions[cr.Action]++
		mu.Unlock()
	})
	if len(ids) != 1 || actions["created"] != 1 || actions["updated"] != 49 {
		t.Fatalf("ids %v actions %v", ids, actions)
	}
	var n int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE city_id = 1002`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d jobs", n)
	}
}

func TestConcurrentUnpublish(t *testing.T) {
	t.Parallel()
	key := liveKey(230, 10)
	cr := create(t, key, jobBody("Concurrent Unpublish", 1003))
	var mu sync.Mutex
	actions := map[string]int{}
	fifty(func(int) {
		r := do(t, appFlat, "POST", "/v2/jobs/unpublish", `{"job_id":`+itoa(cr.JobID)+`}`, &key)
		var res struct{ Action, Status string }
		r.data(t, &res)
		mu.Lock()
		actions[res.Action]++
		mu.Unlock()
		if r.Status != 200 || res.Status != "expired" {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	if actions["unpublished"] != 1 || actions["already_unpublished"] != 49 {
		t.Fatalf("%v", actions)
	}
}
