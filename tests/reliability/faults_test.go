package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// private is a system whose dependencies are its own, so they can be stopped,
// frozen and crashed.
type private struct {
	pg          *faults.Postgres
	redis       *faults.Process
	temporal    *faults.Process
	temporalCLI string
	sys         *suite.Suite
	db          *pgxpool.Pool
}

var (
	privOnce sync.Once
	priv     *private
	privErr  error
)

// requestTimeout is the private system's REQUEST_TIMEOUT: no request may
// hang longer than this (plus the gateway's own UPSTREAM_TIMEOUT margin).
const requestTimeout = 3 * time.Second

// privateSystem starts (once per test binary) the private dependencies and
// the whole suite on them, with the jobs worker relaying expiries to Temporal.
func privateSystem(t testing.TB) *private {
	t.Helper()
	privOnce.Do(func() { priv, privErr = startPrivate(context.Background()) })
	if privErr != nil {
		t.Fatalf("private system: %v", privErr)
	}
	return priv
}

func startPrivate(ctx context.Context) (*private, error) {
	p := &private{}
	var err error
	if p.pg, err = faults.StartPostgres(ctx); err != nil {
		return p, err
	}
	if p.redis, err = faults.StartRedis(ctx); err != nil {
		return p, err
	}
	if p.temporalCLI, err = faults.TemporalCLI(ctx); err != nil {
		return p, err
	}
	if p.temporal, err = faults.StartTemporal(ctx, p.temporalCLI); err != nil {
		return p, err
	}
	p.sys, err = suite.Start(ctx, suite.Options{
		Name: "faults", DatabaseURL: p.pg.URL, RedisURL: "redis://" + p.redis.Addr + "/0", Keys: true,
		Workers: []string{"jobs-worker"},
		Env: append([]string{"TEMPORAL_ADDRESS=" + p.temporal.Addr, "REQUEST_TIMEOUT=" + requestTimeout.String(),
			"UPSTREAM_TIMEOUT=" + requestTimeout.String(), "JOBS_RELAY_INTERVAL=200ms", "KEY_CACHE_TTL=2s",
			"CORS_ALLOW_ORIGINS=https://board.example"}, generous...),
	})
	if err != nil {
		return p, err
	}
	p.db, err = pgxpool.New(ctx, p.pg.URL)
	return p, err
}

// stopPrivate stops what privateSystem started (from TestMain).
func stopPrivate() {
	p := priv
	if p == nil {
		return
	}
	if privErr != nil || failed.Load() {
		if p.sys != nil {
			p.sys.DumpLogs(os.Stderr)
		}
		if p.pg != nil {
			fmt.Fprintf(os.Stderr, "----- private postgres -----\n%s\n", tail(p.pg.Log()))
		}
	}
	if p.db != nil {
		p.db.Close()
	}
	if p.sys != nil {
		p.sys.Stop()
	}
	if p.temporal != nil {
		p.temporal.Remove()
	}
	if p.redis != nil {
		p.redis.Remove()
	}
	if p.pg != nil {
		p.pg.Remove()
	}
}

// failed is set by a failing fault test so that TestMain dumps the private
// system's logs.
var failed atomic.Bool

func noteFailure(t *testing.T) { t.Cleanup(func() { failed.Store(failed.Load() || t.Failed()) }) }

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

type health struct {
	Status string `json:"status"`
	Redis  struct {
		Status string `json:"status"`
	} `json:"redis"`
	RateLimiter string `json:"rate_limiter"`
	Services    map[string]struct {
		Status string `json:"status"`
	} `json:"services"`
}

func (p *private) health(t testing.TB, k string) health {
	t.Helper()
	var h health
	r := do(t, "GET", p.sys.URL["gateway"]+"/v2/health", "", "X-API-Key", k)
	if r.status != 200 {
		t.Fatalf("health: %s", r)
	}
	r.into(t, &h)
	return h
}

// pids of every process of the private system, to prove none was restarted.
func (p *private) pids() map[string]int {
	out := map[string]int{}
	for _, name := range append(append([]string{}, suite.APIs...), "jobs-worker") {
		out[name] = p.sys.PID(name)
	}
	return out
}

// Redis stopped mid-run: reads and authenticated requests keep working,
// writes keep a per-instance limit, /v2/health says so; when Redis returns,
// health and the shared limiter recover with no restart.
func TestRedisStoppedMidRun(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	live := p.sys.Keys[liveKey]
	if h := p.health(t, live); h.Redis.Status != "connected" || h.RateLimiter != "redis" {
		t.Fatalf("before: %+v", h)
	}
	before := p.pids()

	if err := p.redis.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v2/jobs", "/v2/cities?search=ber", "/v2/events", "/v2/blog"} {
		if r := do(t, "GET", gw+path, "", "X-API-Key", live); r.status != 200 {
			t.Fatalf("read %s with Redis down: %s", path, r)
		}
	}
	// A key with a budget of 5: writes are still limited, now per instance.
	limited := newKey(t, p.sys, "-scopes", "write", "-rate-limit", "5")
	codes := map[int]int{}
	for range 8 {
		r := do(t, "POST", gw+"/v2/jobs/unpublish", `{"job_id":999999999}`, "X-API-Key", limited)
		codes[r.status]++
		if r.status == 429 && r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", r.header)
		}
	}
	if codes[404] != 5 || codes[429] != 3 {
		t.Fatalf("writes with Redis down: %v; want 5 answered (404) and 3 limited", codes)
	}
	if h := p.health(t, live); h.Redis.Status != "disconnected" || h.RateLimiter != "local" || h.Status != "degraded" {
		t.Fatalf("health with Redis down: %+v", h)
	}

	if err := p.redis.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "health back to redis", func() bool {
		h := p.health(t, live)
		return h.Redis.Status == "connected" && h.RateLimiter == "redis" && h.Status == "ok"
	})
	// The shared budget is back: exactly 5 of a fresh key's writes pass.
	fresh := newKey(t, p.sys, "-scopes", "write", "-rate-limit", "5")
	codes = map[int]int{}
	for range 7 {
		codes[do(t, "POST", gw+"/v2/jobs/unpublish", `{"job_id":999999999}`, "X-API-Key", fresh).status]++
	}
	if codes[404] != 5 || codes[429] != 2 {
		t.Fatalf("writes after Redis returned: %v", codes)
	}
	if after := p.pids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a process was restarted: %v -> %v", before, after)
	}
}

// Postgres frozen, then crashed and restarted mid-run: every request gets a
// 503 or 504 envelope (none hangs past the request timeout: the client's 30 s
// would report it), and requests succeed again without restarting any service.
func TestPostgresRestartMidRun(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	k := p.sys.Keys[importerKey]
	ctx := context.Background()
	if r := do(t, "POST", gw+"/v2/jobs", jobBody("Before the restart "+randomSuffix()), "X-API-Key", k); r.status != 201 {
		t.Fatalf("before: %s", r)
	}
	before := p.pids()

	requests := func(phase string) {
		t.Helper()
		var got []string
		defer func() { t.Logf("Postgres %s: %s", phase, strings.Join(got, ", ")) }()
		for _, rq := range []struct{ method, path, body string }{
			{"GET", "/v2/jobs", ""},
			{"POST", "/v2/jobs", jobBody("During " + phase + " " + randomSuffix())},
			{"GET", "/v2/cities?search=ber", ""},
			{"GET", "/v2/events", ""},
		} {
			r := do(t, rq.method, gw+rq.path, rq.body, "X-API-Key", k)
			got = append(got, fmt.Sprintf("%s %s %d %s", rq.method, rq.path, r.status, r.code()))
			// 503 (unreachable, the client may retry) or 504 (no answer in
			// time); a 500 would tell the client the request itself was at fault.
			if r.status != 503 && r.status != 504 {
				t.Fatalf("%s %s with Postgres %s: %s", rq.method, rq.path, phase, r)
			}
		}
	}

	// Frozen: connections stay open and nothing answers.
	if err := p.pg.Freeze(); err != nil {
		t.Fatal(err)
	}
	requests("frozen")
	if err := p.pg.Thaw(); err != nil {
		t.Fatal(err)
	}
	// Crashed: every pooled connection breaks; then down for a while.
	if err := p.pg.Stop(ctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	requests("stopped")
	if err := p.pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var created createResult
	eventually(t, 60*time.Second, "creates succeed after the restart", func() bool {
		r := do(t, "POST", gw+"/v2/jobs", jobBody("After the restart "+randomSuffix()), "X-API-Key", k)
		if r.status == 201 {
			r.into(t, &created)
		}
		return r.status == 201
	})
	for _, path := range []string{"/v2/jobs", "/v2/cities?search=ber", "/v2/events"} {
		eventually(t, 30*time.Second, "GET "+path+" after the restart", func() bool {
			return do(t, "GET", gw+path, "", "X-API-Key", k).status == 200
		})
	}
	if n := count(t, p.db, `SELECT count(*) FROM jobs.jobs WHERE id = $1`, created.JobID); n != 1 {
		t.Fatal("job created after the restart is not stored")
	}
	if after := p.pids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a process was restarted: %v -> %v", before, after)
	}
}

// temporalHas reports whether Temporal knows workflow id.
func (p *private) temporalHas(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, p.temporalCLI, "workflow", "describe", "--address", p.temporal.Addr,
		"--namespace", "default", "--workflow-id", id).Run() == nil
}

// Temporal down: job creation still succeeds (the expiry intent waits in the
// outbox, and the relay keeps retrying), and once Temporal returns the job's
// expiry workflow is started.
func TestTemporalDownThenBack(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	k := p.sys.Keys[importerKey]

	// With Temporal up, a new job's expiry reaches it.
	r := do(t, "POST", gw+"/v2/jobs", jobBody("Temporal up "+randomSuffix()), "X-API-Key", k)
	var up createResult
	r.into(t, &up)
	eventually(t, 60*time.Second, "expiry workflow of a job created with Temporal up", func() bool {
		return p.temporalHas("job-expiry-" + strconv.FormatInt(up.JobID, 10))
	})

	if err := p.temporal.Kill(); err != nil {
		t.Fatal(err)
	}
	r = do(t, "POST", gw+"/v2/jobs", jobBody("Temporal down "+randomSuffix()), "X-API-Key", k)
	if r.status != 201 {
		t.Fatalf("create with Temporal down: %s", r)
	}
	var down createResult
	r.into(t, &down)
	// The relay has tried and failed at least once: the intent is kept.
	eventually(t, 30*time.Second, "the relay retries the kept expiry intent", func() bool {
		return count(t, p.db, `SELECT count(*) FROM jobs.expiry_outbox WHERE job_id = $1 AND attempts > 0`, down.JobID) == 1
	})

	if err := p.temporal.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	id := "job-expiry-" + strconv.FormatInt(down.JobID, 10)
	eventually(t, 120*time.Second, "expiry workflow once Temporal is back", func() bool { return p.temporalHas(id) })
	eventually(t, 30*time.Second, "outbox drained", func() bool {
		return count(t, p.db, `SELECT count(*) FROM jobs.expiry_outbox WHERE job_id = $1`, down.JobID) == 0
	})
}

// A backend killed: the gateway answers its routes at once with a 503
// service_unavailable envelope (not a timeout), health names it, and it is
// served again once the backend is back.
func TestBackendKilled(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	live := p.sys.Keys[liveKey]
	if err := p.sys.Kill("content"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v2/blog", "/v2/vine/blog"} {
		r := do(t, "GET", gw+path, "")
		if r.status != 503 || r.code() != "service_unavailable" {
			t.Fatalf("GET %s with content down: %s", path, r)
		}
	}
	if r := do(t, "GET", gw+"/v2/jobs", "", "X-API-Key", live); r.status != 200 {
		t.Fatalf("another backend's route with content down: %s", r)
	}
	eventually(t, 20*time.Second, "health names the dead backend", func() bool {
		h := p.health(t, live)
		return h.Services["content"].Status == "down" && h.Status == "degraded"
	})
	if err := p.sys.Start(context.Background(), "content"); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "GET", gw+"/v2/blog", ""); r.status != 200 {
		t.Fatalf("GET /v2/blog after content returned: %s", r)
	}
}

// attempt is one create of the burst.
type attempt struct {
	idem, title string
	first       reply
}

// SIGKILL of the jobs service during a burst of creates: every job that got a
// 201 is in the database, a retry of any request with its Idempotency-Key
// replays (when it had been stored) or creates it once (when it had not), and
// no request ends up as two jobs.
func TestJobsKilledDuringCreateBurst(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gw := p.sys.URL["gateway"]
	k := newKey(t, p.sys, "-scopes", "write", "-trusted-importer")
	prefix := "Burst " + randomSuffix() + " "
	attempts, killedAfter := burst(gw, k, prefix, 6, 25, func() {
		if err := p.sys.Kill("jobs"); err != nil {
			t.Error(err)
		}
	}, func() {
		if err := p.sys.Start(context.Background(), "jobs"); err != nil {
			t.Error(err)
		}
	})
	acked := verifyBurst(t, p.db, gw, k, prefix, attempts)
	t.Logf("%d creates, %d acknowledged before the retries, kill after %d acknowledgements", len(attempts), acked, killedAfter)
	if acked == len(attempts) {
		t.Fatalf("the kill interrupted nothing (%d of %d acknowledged): the test proved nothing", acked, len(attempts))
	}
}

// burst runs workers goroutines creating distinct jobs (each with its own
// Idempotency-Key) through gw; after killAfter 201s it calls kill, lets the
// burst run into the dead backend a little, calls restart, and stops once
// every worker has seen the backend answer again.
func burst(gw, k, prefix string, workers, killAfter int, kill, restart func()) ([]attempt, int) {
	var (
		mu       sync.Mutex
		attempts []attempt
		acked    atomic.Int64
		seq      atomic.Int64
		phase    atomic.Int32 // 0 before the kill, 1 killed, 2 restarted
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			okAfterRestart := 0
			for okAfterRestart < 3 {
				n := seq.Add(1)
				a := attempt{idem: fmt.Sprintf("burst-%d-%s", n, randomSuffix()), title: fmt.Sprintf("%s%06d", prefix, n)}
				a.first = send("POST", gw+"/v2/jobs", []byte(jobBody(a.title)), "X-API-Key", k, "Idempotency-Key", a.idem)
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
				if a.first.status == 201 {
					acked.Add(1)
					if phase.Load() == 2 {
						okAfterRestart++
					}
				} else {
					time.Sleep(100 * time.Millisecond) // a client backing off
				}
				if seq.Load() > 5000 {
					return // a bound, whatever happens
				}
			}
		}()
	}
	for acked.Load() < int64(killAfter) && seq.Load() < 5000 {
		time.Sleep(5 * time.Millisecond)
	}
	killedAfter := int(acked.Load())
	kill()
	phase.Store(1)
	time.Sleep(300 * time.Millisecond) // creates keep arriving at the dead backend
	restart()
	phase.Store(2)
	wg.Wait()
	return attempts, killedAfter
}

// verifyBurst checks the accounting of a burst and returns how many creates
// were acknowledged at first try.
func verifyBurst(t *testing.T, pool *pgxpool.Pool, gw, k, prefix string, attempts []attempt) int {
	t.Helper()
	acked := 0
	for _, a := range attempts {
		if p := a.first.envelopeProblem(); p != "" {
			t.Errorf("%s: %s", a.title, p)
			continue
		}
		if a.first.status == 201 {
			acked++
			var cr createResult
			if err := jsonInto(a.first, &cr); err != nil {
				t.Error(err)
				continue
			}
			if n := count(t, pool, `SELECT count(*) FROM jobs.jobs WHERE id = $1 AND title = $2`, cr.JobID, a.title); n != 1 {
				t.Errorf("acknowledged job %d (%s) is not in the database", cr.JobID, a.title)
			}
		} else if a.first.status < 500 {
			t.Errorf("%s: a create failed with a client error: %s", a.title, a.first)
		}
		retry := send("POST", gw+"/v2/jobs", []byte(jobBody(a.title)), "X-API-Key", k, "Idempotency-Key", a.idem)
		switch {
		case retry.status != 201:
			t.Errorf("retry of %s: %s", a.title, retry)
		case a.first.status == 201 && (retry.header.Get("Idempotent-Replayed") != "true" || string(retry.raw) != string(a.first.raw)):
			t.Errorf("retry of acknowledged %s does not replay: %s", a.title, retry)
		}
	}
	if n := count(t, pool, `SELECT count(*) FROM jobs.jobs WHERE title LIKE $1`, prefix+"%"); n != len(attempts) {
		t.Errorf("%d jobs for %d distinct creates", n, len(attempts))
	}
	if n := count(t, pool, `SELECT count(*) FROM (SELECT title FROM jobs.jobs WHERE title LIKE $1 GROUP BY title HAVING count(*) > 1) d`, prefix+"%"); n != 0 {
		t.Errorf("%d creates stored twice", n)
	}
	return acked
}
