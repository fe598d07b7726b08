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
			"CORS_ALLOW_ORIGINS=https://board.example", "WEBHOOKS_ALLOW_HTTP=true", "WEBHOOKS_ALLOW_ADDRESSES=loopback"}, generous...),
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
// writes are answered (their announcements owed, then settled) and keep a
// per-instance limit, /v2/health says so; when Redis returns,
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
	// Writes are answered; their announcements are owed, then settled.
	if r := do(t, "POST", gw+"/v2/jobs", jobBody("Redis stopped "+randomSuffix()), "X-API-Key", p.sys.Keys[importerKey]); r.status != 201 {
		t.Fatalf("write with Redis down: %s", r)
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
	eventually(t, 10*time.Second, "announcements settled", func() bool {
		return count(t, p.db, `SELECT count(*) FROM jobs.unannounced`) == 0
	})
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

// envOf is the value of name in env (the last one, as exec uses it).
func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}

// cachingGateways starts two more gateway replicas on the private system,
// with the shared response cache on (RESPONSE_CACHE_STORE=redis) and their
// admin ports, and stops them when t ends.
func (p *private) cachingGateways(t *testing.T) *suite.Suite {
	t.Helper()
	env := []string{"RESPONSE_CACHE_MB=16", "RESPONSE_CACHE_STORE=redis", "KEY_CACHE_TTL=2s",
		"REQUEST_TIMEOUT=" + requestTimeout.String(), "UPSTREAM_TIMEOUT=" + requestTimeout.String(),
		// The backends' signing secret and the versions' prefix are the
		// private system's.
		"INTERNAL_IDENTITY_SECRET=" + envOf(p.sys.Env, "INTERNAL_IDENTITY_SECRET"),
		"REDIS_KEY_PREFIX=" + envOf(p.sys.Env, "REDIS_KEY_PREFIX")}
	for _, b := range []string{"jobs", "directory", "content", "community"} {
		env = append(env, strings.ToUpper(b)+"_URL="+p.sys.URL[b])
	}
	gws, err := suite.Start(context.Background(), suite.Options{Name: "away", DatabaseURL: p.pg.URL,
		RedisURL: "redis://" + p.redis.Addr + "/0", Services: []string{"gateway"}, Replicas: 2, Seeds: [][]string{},
		Admin: true, Env: env})
	if err != nil {
		t.Fatalf("two caching gateways: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			gws.DumpLogs(os.Stderr)
		}
		gws.Stop()
	})
	return gws
}

// metric is the value of an unlabelled series on an admin /metrics page.
func metric(t *testing.T, admin, name string) string {
	t.Helper()
	r := send("GET", admin+"/metrics", nil)
	for _, line := range strings.Split(string(r.raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// cacheHits is the gateway's response cache hits on GET /v2/jobs.
func cacheHits(t *testing.T, admin string) int {
	t.Helper()
	r := send("GET", admin+"/metrics", nil)
	for _, line := range strings.Split(string(r.raw), "\n") {
		if strings.HasPrefix(line, "gateway_response_cache_total{") && strings.Contains(line, `outcome="hit"`) &&
			strings.Contains(line, `route="/v2/jobs"`) {
			n, _ := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
			return n
		}
	}
	return 0
}

// Redis hung (frozen: it keeps its data, as after a partition) under two
// gateway replicas with the shared response cache: reads answer from
// PostgreSQL, writes are answered and owe their announcements, each replica
// limits alone (a client gets at most twice its budget over the two, what it
// spent through Redis in the window counted), health says degraded and
// redis_away is 1; once Redis answers, nothing is stale: a read cached
// before the outage shows the write made during it, on both replicas, at
// once (even with the jobs service, which owes the write's announcement,
// killed before Redis returned), and nothing is owed any more.
func TestRedisAwayCachedReadsWritesBudgets(t *testing.T) {
	noteFailure(t)
	p := privateSystem(t)
	gws := p.cachingGateways(t)
	g := []string{gws.URL["gateway#1"], gws.URL["gateway#2"]}
	live := p.sys.Keys[liveKey]
	writer := p.sys.Keys[importerKey]
	token := "awaymark" + randomSuffix()
	search := "/v2/jobs?q=" + token

	// Cached before the outage: the answer without the job (the shared
	// store keeps it the second time a replica forwards it, written off the
	// request's path; after a Redis restart only once the writers have
	// created the versions again).
	eventually(t, 20*time.Second, "the search kept before the outage", func() bool {
		for i := range 4 {
			r := do(t, "GET", g[i%2]+search, "", "X-API-Key", live)
			if r.status != 200 || strings.Contains(string(r.raw), token) {
				t.Fatalf("search before: %s", r)
			}
		}
		time.Sleep(300 * time.Millisecond)
		before := cacheHits(t, gws.Admin["gateway#1"])
		do(t, "GET", g[0]+search, "", "X-API-Key", live)
		return cacheHits(t, gws.Admin["gateway#1"]) == before+1
	})
	limited := newKey(t, p.sys, "-scopes", "write", "-rate-limit", "5")
	unpublish := func(gw string) int {
		r := do(t, "POST", gw+"/v2/jobs/unpublish", `{"job_id":999999999}`, "X-API-Key", limited)
		if r.status == 429 && r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", r.header)
		}
		return r.status
	}
	// Two of its five through Redis, on the first replica.
	for range 2 {
		if s := unpublish(g[0]); s != 404 {
			t.Fatalf("write through Redis: %d", s)
		}
	}

	if err := p.redis.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			_ = p.redis.Thaw()
		}
	}()
	for _, gw := range g {
		for _, path := range []string{"/v2/jobs", "/v2/cities?search=ber", "/v2/events", "/v2/blog"} {
			if r := do(t, "GET", gw+path, "", "X-API-Key", live); r.status != 200 {
				t.Fatalf("read %s with Redis away: %s", path, r)
			}
		}
	}
	title := "Away " + token
	r := do(t, "POST", g[1]+"/v2/jobs", jobBody(title), "X-API-Key", writer, "Idempotency-Key", "away-"+token)
	if r.status != 201 {
		t.Fatalf("write with Redis away: %s", r)
	}
	if owed := count(t, p.db, `SELECT count(*) FROM jobs.unannounced`); owed == 0 {
		t.Fatal("the write is not owed its announcement")
	}
	for _, gw := range g {
		if r := do(t, "GET", gw+search, "", "X-API-Key", live); r.status != 200 || !strings.Contains(string(r.raw), title) {
			t.Fatalf("search with Redis away on %s: %s", gw, r)
		}
	}
	// Per replica: the first admits 3 more (2 went through Redis), the
	// second 5; 10 in the window, twice the budget.
	for i, want := range []int{3, 5} {
		codes := map[int]int{}
		for range 8 {
			codes[unpublish(g[i])]++
		}
		if codes[404] != want || codes[429] != 8-want {
			t.Fatalf("replica %d with Redis away: %v; want %d answered and the rest limited", i+1, codes, want)
		}
	}
	for i, gw := range g {
		var h health
		do(t, "GET", gw+"/v2/health", "", "X-API-Key", live).into(t, &h)
		if h.Status != "degraded" || h.Redis.Status != "disconnected" || h.RateLimiter != "local" {
			t.Fatalf("health of replica %d with Redis away: %+v", i+1, h)
		}
		if v := metric(t, gws.Admin[fmt.Sprintf("gateway#%d", i+1)], "redis_away"); v != "1" {
			t.Fatalf("redis_away on replica %d: %q", i+1, v)
		}
	}

	// The jobs service dies before Redis returns, so nothing settles what
	// it owes until it is back: only the epoch keeps the kept answer from
	// being served.
	if err := p.sys.Kill("jobs"); err != nil {
		t.Fatal(err)
	}
	if err := p.redis.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	// No stale read from the moment Redis answers: each read misses Redis
	// (and goes to the backend, away now: 503) or comes after the epoch
	// moved, when nothing kept before the outage matches.
	reads := func(d time.Duration, backendUp bool) (answered, unavailable int) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			for _, gw := range g {
				r := do(t, "GET", gw+search, "", "X-API-Key", live)
				switch {
				case r.status == 200 && strings.Contains(string(r.raw), title):
					answered++
				case r.status == 503 && !backendUp:
					unavailable++
				default:
					t.Fatalf("stale or failed read on %s after Redis returned (jobs up: %v): %s", gw, backendUp, r)
				}
			}
		}
		return answered, unavailable
	}
	_, unavailable := reads(3*time.Second, false)
	if err := p.sys.Start(context.Background(), "jobs"); err != nil {
		t.Fatal(err)
	}
	answered, _ := reads(2*time.Second, true)
	eventually(t, 10*time.Second, "announcements settled", func() bool {
		return count(t, p.db, `SELECT count(*) FROM jobs.unannounced`) == 0
	})
	for i := range g {
		eventually(t, 10*time.Second, "redis_away back to 0", func() bool {
			return metric(t, gws.Admin[fmt.Sprintf("gateway#%d", i+1)], "redis_away") == "0"
		})
	}
	if n := count(t, p.db, `SELECT count(*) FROM jobs.jobs WHERE title = $1`, title); n != 1 {
		t.Fatalf("the job written while Redis was away is stored %d times", n)
	}
	t.Logf("after Redis returned: %d reads answered 503 while the jobs service was down, %d answered with the write once it was back; none stale", unavailable, answered)
}
