package reliability

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakStats is the accounting of a soak run.
type soakStats struct {
	mu        sync.Mutex
	requests  int
	byClass   map[string]int // "2xx", "4xx", "5xx service_unavailable", "no answer", ...
	byRoute   map[string]int
	calmFails []string // 5xx or no answer while no fault was active (beyond the grace period)
	creates   []attempt
	faults    []string
}

// record counts one answer; calm says whether no fault was active when the
// request started, and the recorder checks it still holds at the end.
func (s *soakStats) record(route string, r reply, calm bool, stillCalm func() bool) {
	calm = calm && stillCalm()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.byRoute[route]++
	class := fmt.Sprintf("%dxx", r.status/100)
	switch {
	case r.err != nil:
		class = "no answer"
	case r.envelopeProblem() != "":
		class = "not an envelope"
	case r.status >= 500 || r.status == 429:
		class = fmt.Sprintf("%d %s", r.status, r.code())
	}
	s.byClass[class]++
	if calm && (r.err != nil || r.status >= 500 || class == "not an envelope") && len(s.calmFails) < 20 {
		s.calmFails = append(s.calmFails, route+": "+r.String())
	}
}

// TestSoak runs mixed traffic against the private system for SOAK_DURATION
// (make soak; skipped otherwise) while faults are injected in turn — Redis
// stopped, PostgreSQL crashed, the jobs service SIGKILLed, Temporal killed, a
// backend killed — and then does the accounting: every acknowledged job is
// stored, every create retried with its Idempotency-Key ends as exactly one
// job, every job's expiry reaches Temporal, and nothing but a fault window
// saw a 5xx.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SOAK_DURATION"))
	if err != nil || d <= 0 {
		t.Skip("set SOAK_DURATION (make soak) to run the soak test")
	}
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	live := p.sys.Keys[liveKey]
	writer := newKey(t, p.sys, "-scopes", "write", "-trusted-importer")
	prefix := "Soak " + randomSuffix() + " "
	st := &soakStats{byClass: map[string]int{}, byRoute: map[string]int{}}

	var faultActive atomic.Bool
	var calmSince atomic.Int64 // unix nanos; a short grace after each recovery
	calmSince.Store(time.Now().UnixNano())
	const grace = 10 * time.Second
	isCalm := func() bool {
		return !faultActive.Load() && time.Since(time.Unix(0, calmSince.Load())) > grace
	}

	soakStart := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	var seq atomic.Int64
	var createdMu sync.Mutex
	var created []int64 // job ids acknowledged, for unpublish traffic
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				calmAtStart := isCalm()
				switch n := rng.IntN(100); {
				case n < 35:
					q := []string{"", "city=berlin", "q=manager", "job_type=fulltime", "remote=1"}[rng.IntN(5)]
					st.record("GET /v2/jobs", send("GET", gw+"/v2/jobs?"+q, nil, "X-API-Key", live), calmAtStart, isCalm)
				case n < 45:
					st.record("GET /v2/cities", send("GET", gw+"/v2/cities?search=ber", nil, "X-API-Key", live), calmAtStart, isCalm)
				case n < 50:
					st.record("GET /v2/events", send("GET", gw+"/v2/events", nil, "X-API-Key", live), calmAtStart, isCalm)
				case n < 55:
					st.record("GET /v2/blog", send("GET", gw+"/v2/blog", nil), calmAtStart, isCalm)
				case n < 58:
					st.record("GET /v2/health", send("GET", gw+"/v2/health", nil, "X-API-Key", live), calmAtStart, isCalm)
				case n < 85:
					i := seq.Add(1)
					a := attempt{idem: fmt.Sprintf("soak-%d-%s", i, randomSuffix()), title: fmt.Sprintf("%s%07d", prefix, i)}
					a.first = send("POST", gw+"/v2/jobs", []byte(jobBody(a.title)), "X-API-Key", writer, "Idempotency-Key", a.idem)
					st.record("POST /v2/jobs", a.first, calmAtStart, isCalm)
					var cr createResult
					if a.first.status == 201 && jsonInto(a.first, &cr) == nil {
						createdMu.Lock()
						created = append(created, cr.JobID)
						createdMu.Unlock()
					}
					st.mu.Lock()
					st.creates = append(st.creates, a)
					st.mu.Unlock()
				case n < 92:
					createdMu.Lock()
					var id int64
					if len(created) > 0 {
						id = created[rng.IntN(len(created))]
					}
					createdMu.Unlock()
					if id > 0 {
						st.record("POST /v2/jobs/unpublish", send("POST", gw+"/v2/jobs/unpublish", []byte(fmt.Sprintf(`{"job_id":%d}`, id)), "X-API-Key", writer), calmAtStart, isCalm)
					}
				default:
					st.record("POST /v2/feedback", send("POST", gw+"/v2/feedback", []byte(`{"message":"soak feedback"}`)), calmAtStart, isCalm)
				}
				time.Sleep(time.Duration(5+rng.IntN(20)) * time.Millisecond)
			}
		}()
	}

	// The faults, in turn, one at a time, until the duration is spent.
	type fault struct {
		name    string
		inject  func() error
		recover func() error
		downFor time.Duration
	}
	bg := context.Background()
	schedule := []fault{
		{"redis stopped", p.redis.Stop, func() error { return p.redis.Start(bg) }, 8 * time.Second},
		{"postgres crashed", func() error { return p.pg.Stop(bg, "immediate") }, func() error { return p.pg.Start(bg) }, 5 * time.Second},
		{"jobs SIGKILLed", func() error { return p.sys.Kill("jobs") }, func() error { return p.sys.Start(bg, "jobs") }, 2 * time.Second},
		{"temporal killed", p.temporal.Kill, func() error { return p.temporal.Start(bg) }, 8 * time.Second},
		{"postgres frozen", p.pg.Freeze, p.pg.Thaw, 5 * time.Second},
		{"directory SIGKILLed", func() error { return p.sys.Kill("directory") }, func() error { return p.sys.Start(bg, "directory") }, 3 * time.Second},
	}
	every := max(d/time.Duration(2*len(schedule)+1), 15*time.Second)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
		if ctx.Err() != nil {
			break
		}
		f := schedule[i%len(schedule)]
		faultActive.Store(true)
		start := time.Now()
		if err := f.inject(); err != nil {
			t.Errorf("inject %s: %v", f.name, err)
		}
		time.Sleep(f.downFor)
		if err := f.recover(); err != nil {
			t.Errorf("recover from %s: %v", f.name, err)
		}
		calmSince.Store(time.Now().UnixNano())
		faultActive.Store(false)
		st.faults = append(st.faults, fmt.Sprintf("%s at +%s for %s", f.name, start.Sub(soakStart).Round(time.Second), time.Since(start).Round(100*time.Millisecond)))
	}
	wg.Wait()

	// Accounting.
	lost, replayed := 0, 0
	acked := 0
	for _, a := range st.creates {
		if a.first.status != 201 {
			continue
		}
		acked++
		var cr createResult
		if err := jsonInto(a.first, &cr); err != nil || count(t, p.db, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND title = $2`, cr.JobID, a.title) != 1 {
			lost++
		}
	}
	retried := 0
	for _, a := range st.creates {
		if a.first.status == 201 && rand.IntN(10) != 0 {
			continue // a sample of the acknowledged ones is retried too
		}
		retried++
		r := send("POST", gw+"/v2/jobs", []byte(jobBody(a.title)), "X-API-Key", writer, "Idempotency-Key", a.idem)
		switch {
		case r.status != 201:
			t.Errorf("retry of %s: %s", a.title, r)
		case r.header.Get("Idempotent-Replayed") == "true":
			replayed++
			if a.first.status == 201 && string(r.raw) != string(a.first.raw) {
				t.Errorf("replay of %s differs from its first answer", a.title)
			}
		case a.first.status == 201:
			t.Errorf("retry of acknowledged %s created again: %s", a.title, r)
		}
	}
	stored := count(t, p.db, `SELECT count(*) FROM jobs.jobs WHERE title LIKE $1`, prefix+"%")
	dups := count(t, p.db, `SELECT count(*) FROM (SELECT title FROM jobs.jobs WHERE title LIKE $1 GROUP BY title HAVING count(*) > 1) d`, prefix+"%")
	outboxLeft := 0
	for deadline := time.Now().Add(outboxWait()); time.Now().Before(deadline); time.Sleep(time.Second) {
		if outboxLeft = count(t, p.db, `SELECT count(*) FROM jobs.expiry_outbox`); outboxLeft == 0 {
			break
		}
	}
	if outboxLeft > 0 {
		rows, _ := p.db.Query(context.Background(), `SELECT job_id, attempts, next_try_at::text, coalesce(last_error, '') FROM jobs.expiry_outbox ORDER BY id LIMIT 5`)
		for rows.Next() {
			var id, attempts int64
			var next, last string
			_ = rows.Scan(&id, &attempts, &next, &last)
			t.Logf("outbox: job %d attempts %d next %s: %s", id, attempts, next, last)
		}
		rows.Close()
		rows, _ = p.db.Query(context.Background(), `SELECT pid, coalesce(application_name, ''), coalesce(state, ''), coalesce(wait_event, ''),
			coalesce(xact_start::text, ''), left(query, 120) FROM pg_stat_activity WHERE datname = 'coworkjobs' AND pid <> pg_backend_pid()`)
		for rows.Next() {
			var pid int64
			var app, state, wait, xact, q string
			_ = rows.Scan(&pid, &app, &state, &wait, &xact, &q)
			t.Logf("backend %d %s %s wait=%s xact=%s: %s", pid, app, state, wait, xact, q)
		}
		rows.Close()
		t.Errorf("%d expiry intents not relayed to Temporal 3 minutes after the run", outboxLeft)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s of mixed traffic, 8 clients, %d requests\n", d, st.requests)
	for _, c := range slices.Sorted(maps.Keys(st.byClass)) {
		fmt.Fprintf(&b, "  %-32s %d\n", c, st.byClass[c])
	}
	for _, r := range slices.Sorted(maps.Keys(st.byRoute)) {
		fmt.Fprintf(&b, "  route %-26s %d\n", r, st.byRoute[r])
	}
	fmt.Fprintf(&b, "  faults: %s\n", strings.Join(st.faults, "; "))
	fmt.Fprintf(&b, "  creates: %d distinct, %d acknowledged (201) at first try, %d retried with their key (%d replayed)\n",
		len(st.creates), acked, retried, replayed)
	fmt.Fprintf(&b, "  jobs stored: %d; acknowledged jobs lost: %d; creates stored twice: %d; expiry intents left in the outbox: %d\n", stored, lost, dups, outboxLeft)
	fmt.Fprintf(&b, "  5xx or no answer outside fault windows (+%s grace): %d\n", grace, len(st.calmFails))
	t.Log("\n" + b.String())
	fmt.Print(b.String())

	if lost != 0 || dups != 0 || stored != len(st.creates) {
		t.Errorf("jobs lost %d, stored twice %d, stored %d of %d creates", lost, dups, stored, len(st.creates))
	}
	if n := st.byClass["500 server_error"]; n != 0 {
		t.Errorf("%d answers were 500 server_error: a fault must read as 503 or 504", n)
	}
	if n := st.byClass["not an envelope"]; n != 0 {
		t.Errorf("%d answers were not the envelope", n)
	}
	for _, f := range st.calmFails {
		t.Errorf("outside a fault window: %s", f)
	}
	if len(st.faults) == 0 {
		t.Errorf("no fault was injected (SOAK_DURATION %s too short)", d)
	}
}

// outboxWait bounds how long the accounting waits for the relay to hand every
// expiry intent to Temporal (SOAK_OUTBOX_WAIT, default 3m).
func outboxWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SOAK_OUTBOX_WAIT")); err == nil {
		return d
	}
	return 3 * time.Minute
}
