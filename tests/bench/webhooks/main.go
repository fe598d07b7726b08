// Command webhooks measures issue 35's speed targets on the real stack: it
// starts PostgreSQL's throwaway database, the Temporal dev server
// (bin/temporal), the directory, jobs and gateway services and jobs-worker
// (tests/suite), registers -endpoints endpoints (20 per platform key, the
// owner's limit) at one loopback HTTP receiver with a path each, drives
// -rate job changes per second through the gateway for -duration (creates,
// updates, pauses and resumes mixed), and reports the commit-to-receipt
// latency (receipt time minus the event's occurred_at, the body's
// timestamp) with lost and duplicate deliveries. A second phase runs the
// same load while one endpoint answers 500 throughout and compares the
// others' p95 with the first phase's. Last, the changes feed and GET
// /v2/jobs are paged through the gateway with the same key and page size.
//
//	go run ./tests/bench/webhooks [-duration 60s] [-rate 50] [-endpoints 100] [-phases healthy,failing,feed]
//
// `make bench-webhooks` runs it. Loopback only; every loop is bounded in time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

type config struct {
	Duration, Drain time.Duration
	Rate, Endpoints int
	Phases          map[string]bool
	Env             []string
	Pprof           string
	FeedDuration    time.Duration
}

func main() {
	var cfg config
	var phases, env string
	flag.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long each load phase drives changes")
	flag.DurationVar(&cfg.Drain, "drain", 60*time.Second, "how long a phase waits after the load for the last deliveries")
	flag.IntVar(&cfg.Rate, "rate", 50, "job changes per second")
	flag.IntVar(&cfg.Endpoints, "endpoints", 100, "endpoints subscribed to every event (20 per platform key)")
	flag.StringVar(&phases, "phases", "healthy,failing,feed", "comma-separated: healthy (all endpoints answer 204), failing (one answers 500), feed (changes feed vs GET /v2/jobs), batch (a single post's webhook delay while a 1 000-row batch is applied; not in the default)")
	flag.DurationVar(&cfg.FeedDuration, "feed-duration", 5*time.Second, "measured time of each feed round")
	flag.StringVar(&env, "env", "", "comma-separated NAME=value added to every service's environment")
	flag.StringVar(&cfg.Pprof, "pprof", "", "write CPU profiles to this directory: jobs-worker's during the healthy phase, jobs' during the first changes-feed round")
	flag.Parse()
	cfg.Phases = map[string]bool{}
	for _, p := range strings.Split(phases, ",") {
		cfg.Phases[strings.TrimSpace(p)] = true
	}
	if env != "" {
		cfg.Env = strings.Split(env, ",")
	}
	if cfg.Duration < time.Second || cfg.Duration > 5*time.Minute || cfg.Rate < 1 || cfg.Rate > 500 || cfg.Endpoints < 1 || cfg.Endpoints > 200 {
		fmt.Fprintln(os.Stderr, "webhooks bench: -duration 1s..5m, -rate 1..500, -endpoints 1..200")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks bench:", err)
		os.Exit(1)
	}
}

func note(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(f, a...))
}

func run(ctx context.Context, cfg config) error {
	defer suite.Cleanup()
	db, err := pgtest.Create("benchhooks")
	if err != nil {
		return err
	}
	defer func() { _ = db.Drop() }()
	cli, err := faults.TemporalCLI(ctx)
	if err != nil {
		return err
	}
	temporal, err := faults.StartTemporal(ctx, cli)
	if err != nil {
		return err
	}
	defer temporal.Remove()
	rcv := newReceiver(cfg.Endpoints)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	note("building and starting the suite with Temporal at %s", temporal.Addr)
	s, err := suite.Start(ctx, suite.Options{
		Name: "benchhooks", DatabaseURL: db.URL, Services: []string{"directory", "jobs", "gateway"}, Workers: []string{"jobs-worker"},
		Seeds: [][]string{{"directory-seed", "demo"}, {"jobs-seed", "demo"}}, Pprof: cfg.Pprof != "",
		Env: append([]string{"TEMPORAL_ADDRESS=" + temporal.Addr, "WEBHOOKS_ALLOW_HTTP=true", "WEBHOOKS_ALLOW_ADDRESSES=loopback",
			"WRITE_RATE_LIMIT_PER_MINUTE=1000000", "KEY_MAX_RATE_LIMIT_PER_MINUTE=1000000", "READ_RATE_LIMIT_PER_MINUTE=100000000",
			"JOBS_PAGINATION_ENABLED=true"}, cfg.Env...),
		Out: os.Stderr,
	})
	if err != nil {
		return err
	}
	defer s.Stop()
	b := &bench{cfg: cfg, s: s, rcv: rcv, gw: s.URL["gateway"], client: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if b.data, err = pgx.Connect(ctx, db.URL); err != nil {
		return err
	}
	defer b.data.Close(context.Background())
	if err := b.setup(ctx, "http://"+ln.Addr().String()); err != nil {
		return err
	}
	rep := &report{cfg: cfg, machine: machine(ctx)}
	rep.commit, _ = gitCommit(ctx)
	var healthy *phase
	if cfg.Phases["healthy"] {
		note("phase healthy: %d changes/s for %s to %d endpoints", cfg.Rate, cfg.Duration, cfg.Endpoints)
		if healthy, err = b.load(ctx, "healthy", -1); err != nil {
			return err
		}
		rep.phases = append(rep.phases, healthy)
	}
	if cfg.Phases["failing"] {
		note("phase failing: endpoint %d answers 500 throughout", cfg.Endpoints-1)
		p, err := b.load(ctx, "one endpoint answering 500", cfg.Endpoints-1)
		if err != nil {
			return err
		}
		rep.phases = append(rep.phases, p)
	}
	if cfg.Phases["batch"] {
		note("batch: single posts' webhooks alone, then while a %d-row batch is applied", batchRows)
		if rep.batch, err = b.batchPhase(ctx); err != nil {
			return err
		}
	}
	if cfg.Phases["feed"] {
		note("feed: GET /v2/jobs/changes vs GET /v2/jobs, %d rounds of %s each", 3, cfg.FeedDuration)
		if rep.feed, err = b.feed(ctx); err != nil {
			return err
		}
	}
	rep.print(os.Stdout)
	return nil
}

type bench struct {
	cfg    config
	s      *suite.Suite
	rcv    *receiver
	gw     string
	client *http.Client
	data   *pgx.Conn
	writer string   // the space key writing jobs
	owners []string // the platform keys owning the endpoints
	seq    atomic.Int64
	jobs   chan *job // jobs free to change
}

type job struct {
	id     int64
	title  string
	active bool
}

func (b *bench) key(ctx context.Context, args ...string) (string, error) {
	out, err := b.s.Run(ctx, "gateway-keys", append([]string{"create", "-json"}, args...)...)
	if err != nil {
		return "", fmt.Errorf("gateway-keys: %w %s", err, out)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return k.Key, nil
}

// setup creates the keys and the endpoints, and 100 jobs to change.
func (b *bench) setup(ctx context.Context, base string) error {
	var err error
	if b.writer, err = b.key(ctx, "-name", "bench-writer", "-space", "1", "-scopes", "read,jobs:write", "-rate-limit", "1000000"); err != nil {
		return err
	}
	for i := 0; i < b.cfg.Endpoints; i++ {
		if i%20 == 0 {
			k, err := b.key(ctx, "-name", "bench-hooks-"+strconv.Itoa(i/20), "-scopes", "read,webhooks:manage", "-rate-limit", "1000000")
			if err != nil {
				return err
			}
			b.owners = append(b.owners, k)
		}
		body := fmt.Sprintf(`{"url":"%s/h/%d","events":["job.created","job.updated","job.paused","job.resumed","job.closed"]}`, base, i)
		if st, out := b.do(ctx, "POST", "/v2/webhooks", b.owners[i/20], body); st != 201 {
			return fmt.Errorf("register endpoint %d: %d %s", i, st, out)
		}
	}
	b.jobs = make(chan *job, 10000)
	for i := 0; i < 100; i++ {
		j, err := b.create(ctx)
		if err != nil {
			return err
		}
		b.jobs <- j
	}
	// The creates' deliveries are not measured: wait them out (no retry
	// pending, and every endpoint's position past the last event).
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var n int
		if err := b.data.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs.webhook_deliveries WHERE status = 'pending')
			+ (SELECT count(*) FROM jobs.event_readers r, (SELECT xid, seq FROM jobs.job_events ORDER BY xid DESC, seq DESC LIMIT 1) l
			   WHERE r.reader LIKE 'webhook:%' AND (r.xid, r.seq) < (l.xid, l.seq))`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	b.rcv.reset(-1)
	return nil
}

func (b *bench) do(ctx context.Context, method, path, key, body string) (int, []byte) {
	req, err := suite.NewRequest(ctx, method, b.gw+path, suite.Body(body), "X-API-Key", key)
	if err != nil {
		return 0, []byte(err.Error())
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func jobBody(title, desc string) string {
	return fmt.Sprintf(`{"title":%q,"company":"Bench Factory","description":"<p>%s</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`, title, desc)
}

func (b *bench) create(ctx context.Context) (*job, error) {
	title := fmt.Sprintf("Webhook Bench Host %d", b.seq.Add(1))
	st, out := b.do(ctx, "POST", "/v2/jobs", b.writer, jobBody(title, "Host our members."))
	if st != 201 {
		return nil, fmt.Errorf("create: %d %s", st, out)
	}
	var env struct {
		Data struct {
			JobID int64 `json:"job_id"`
		}
	}
	if err := json.Unmarshal(out, &env); err != nil || env.Data.JobID == 0 {
		return nil, fmt.Errorf("create: %s", out)
	}
	return &job{id: env.Data.JobID, title: title, active: true}, nil
}

// change makes one change: every fifth a create, every fifth an update of
// an active job, the rest a pause or a resume. Every event it causes is
// one every endpoint hears (a platform key hears of a job while it is
// active or when it stops being so).
func (b *bench) change(ctx context.Context, n int64) error {
	if n%5 == 0 {
		j, err := b.create(ctx)
		if err == nil {
			b.jobs <- j
		}
		return err
	}
	j := <-b.jobs
	defer func() { b.jobs <- j }()
	var st int
	var out []byte
	switch {
	case n%5 == 1 && j.active:
		st, out = b.do(ctx, "POST", "/v2/jobs", b.writer, jobBody(j.title, "Host our members, change "+strconv.FormatInt(n, 10)+"."))
		if st == 201 {
			st = 200
		}
	case j.active:
		st, out = b.do(ctx, "POST", "/v2/jobs/pause", b.writer, fmt.Sprintf(`{"job_id":%d}`, j.id))
		j.active = st != 200
	default:
		st, out = b.do(ctx, "POST", "/v2/jobs/resume", b.writer, fmt.Sprintf(`{"job_id":%d}`, j.id))
		j.active = st == 200
	}
	if st != 200 {
		return fmt.Errorf("change %d of job %d: %d %s", n, j.id, st, out)
	}
	return nil
}

type phase struct {
	name           string
	failing        int
	changes        int
	errors         int
	events         int
	expected       int
	received       int
	lost, dupes    int
	retried        int // second receipts of a webhook-id not yet answered 2xx (retries)
	lat            []time.Duration
	drained        time.Duration
	rate           float64 // deliveries per second during the load
	load           [3]string
	cpu            map[string]time.Duration
	sent           time.Duration
	backlogAtEnd   int
	firstErr       string
	failingReceipt int
}

// load drives the changes for cfg.Duration, waits for every expected
// delivery (at most cfg.Drain), and counts.
func (b *bench) load(ctx context.Context, name string, failing int) (*phase, error) {
	p := &phase{name: name, failing: failing}
	b.rcv.reset(failing)
	start := time.Now()
	cpu0 := cpuByProcess()
	var prof func()
	if b.cfg.Pprof != "" && failing < 0 {
		prof = b.profile(ctx, "jobs-worker", b.cfg.Duration, filepath.Join(b.cfg.Pprof, "jobs-worker.pprof"))
	}
	tick := time.NewTicker(time.Second / time.Duration(b.cfg.Rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	var errs atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, 64)
	for n := int64(0); time.Since(start) < b.cfg.Duration; n++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		sem <- struct{}{}
		p.changes++
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.change(ctx, n); err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		})
	}
	wg.Wait()
	p.sent = time.Since(start)
	p.errors = int(errs.Load())
	if e, ok := firstErr.Load().(string); ok {
		p.firstErr = e
	}
	end := time.Now()
	p.rate = float64(b.rcv.okCount(start, end)) / end.Sub(start).Seconds()
	p.load = loadavg()
	if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.webhook_deliveries WHERE status = 'pending'`).Scan(&p.backlogAtEnd); err != nil {
		return nil, err
	}
	// Every event of the phase is one each endpoint hears (change says why).
	rows, err := b.data.Query(ctx, `SELECT id::text FROM jobs.job_events WHERE occurred_at >= $1 AND occurred_at <= $2
		AND (status = 'active' OR prev_status = 'active')`, start, end)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	p.events = len(ids)
	healthy := b.cfg.Endpoints
	if failing >= 0 {
		healthy--
	}
	p.expected = len(ids) * healthy
	for p.drained = 0; p.drained < b.cfg.Drain; p.drained += 500 * time.Millisecond {
		if b.rcv.missing(ids) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if prof != nil {
		prof()
	}
	p.cpu = cpuDelta(cpu0, cpuByProcess())
	b.rcv.stats(p, ids)
	note("%s: %d changes (%d errors), %d events, %d/%d delivered, p95 %v, lost %d, dupes %d, drained in %v",
		name, p.changes, p.errors, p.events, p.received, p.expected, pct(p.lat, 95), p.lost, p.dupes, p.drained)
	return p, nil
}

// profile takes a CPU profile of process proc for d into file; the
// returned func waits for it.
func (b *bench) profile(ctx context.Context, proc string, d time.Duration, file string) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = os.MkdirAll(filepath.Dir(file), 0o755)
		u := b.s.Pprof[proc] + "/debug/pprof/profile?seconds=" + strconv.Itoa(max(1, int(d.Seconds())))
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			note("pprof: %v", err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(file)
		if err != nil {
			note("pprof: %v", err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}()
	return func() { <-done }
}

// receiver is one HTTP server with a path per endpoint (/h/N). It answers
// 204, or 500 at the failing endpoint, and keeps per endpoint each
// webhook-id's receipts.
type receiver struct {
	mu      sync.Mutex
	failing int
	eps     []map[string]*receipt
	okAt    []time.Time
	// created is, by job, when each endpoint answered 2xx to its
	// job.created (the batch phase's singles and batch rows).
	created map[int64][]time.Time
}

type receipt struct {
	n       int // receipts
	okAt    time.Time
	lat     time.Duration
	dupes   int // receipts after a 2xx answer
	retries int // receipts before one
}

func newReceiver(n int) *receiver {
	r := &receiver{eps: make([]map[string]*receipt, n)}
	r.reset(-1)
	return r
}

func (r *receiver) reset(failing int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing = failing
	for i := range r.eps {
		r.eps[i] = map[string]*receipt{}
	}
	r.okAt = r.okAt[:0]
	r.created = map[int64][]time.Time{}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(req.Body)
	n, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/h/"))
	if err != nil || n < 0 || n >= len(r.eps) {
		w.WriteHeader(404)
		return
	}
	var m struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			IDJob int64 `json:"id_job"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &m)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.eps[n][id]
	if rc == nil {
		rc = &receipt{}
		r.eps[n][id] = rc
	}
	rc.n++
	if n == r.failing {
		w.WriteHeader(500)
		return
	}
	switch {
	case !rc.okAt.IsZero():
		rc.dupes++
	default:
		rc.okAt, rc.lat = now, now.Sub(m.Timestamp)
		r.okAt = append(r.okAt, now)
		if m.Type == "job.created" {
			r.created[m.Data.IDJob] = append(r.created[m.Data.IDJob], now)
		}
		rc.retries = rc.n - 1
	}
	w.WriteHeader(204)
}

func (r *receiver) okCount(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.okAt {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// missing counts the (endpoint, event) pairs of ids not yet answered 2xx.
func (r *receiver) missing(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, ep := range r.eps {
		if i == r.failing {
			continue
		}
		for _, id := range ids {
			if rc := ep[id]; rc == nil || rc.okAt.IsZero() {
				n++
			}
		}
	}
	return n
}

func (r *receiver) stats(p *phase, ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for i, ep := range r.eps {
		if i == r.failing {
			for _, rc := range ep {
				p.failingReceipt += rc.n
			}
			continue
		}
		for id := range want {
			rc := ep[id]
			if rc == nil || rc.okAt.IsZero() {
				p.lost++
				continue
			}
			p.received++
			p.dupes += rc.dupes
			p.retried += rc.retries
			p.lat = append(p.lat, rc.lat)
		}
	}
	slices.Sort(p.lat)
}

func pct(l []time.Duration, q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(float64(len(l)-1) * q / 100)
	return l[i]
}

// feed pages GET /v2/jobs/changes and GET /v2/jobs (50 a page, the most
// GET /v2/jobs gives) with the same key, 4 clients each, in interleaved
// rounds.
type feedResult struct {
	name   string
	pages  int
	errors int
	secs   float64
	lat    []time.Duration
}

func (b *bench) feed(ctx context.Context) ([]*feedResult, error) {
	list := &feedResult{name: "GET /v2/jobs?per_page=50&page=N"}
	changes := &feedResult{name: "GET /v2/jobs/changes?limit=50&since=<cursor>"}
	var total int
	if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.jobs WHERE status = 'active'`).Scan(&total); err != nil {
		return nil, err
	}
	lastPage := max(1, min(total/50, 1000))
	since := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	for round := 0; round < 3; round++ {
		for _, r := range []*feedResult{changes, list} {
			if round%2 == 1 {
				r = map[*feedResult]*feedResult{changes: list, list: changes}[r]
			}
			var prof func()
			if b.cfg.Pprof != "" && round == 0 {
				name := map[bool]string{true: "jobs-changes.pprof", false: "jobs-list.pprof"}[r == changes]
				prof = b.profile(ctx, "jobs", b.cfg.FeedDuration, filepath.Join(b.cfg.Pprof, name))
			}
			b.pageFor(ctx, r, r == changes, lastPage, since)
			if prof != nil {
				prof()
			}
		}
	}
	return []*feedResult{changes, list}, nil
}

func (b *bench) pageFor(ctx context.Context, r *feedResult, changes bool, lastPage int, since string) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	for c := 0; c < 4; c++ {
		wg.Go(func() {
			cursor, page := since, 1+c
			for time.Since(start) < b.cfg.FeedDuration {
				path := "/v2/jobs?per_page=50&page=" + strconv.Itoa(page)
				if changes {
					path = "/v2/jobs/changes?limit=50&since=" + cursor
				}
				t0 := time.Now()
				st, out := b.do(ctx, "GET", path, b.writer, "")
				d := time.Since(t0)
				ok := st == 200
				if changes && ok {
					var env struct {
						Data struct {
							Changes    []json.RawMessage
							NextCursor string `json:"next_cursor"`
						}
					}
					ok = json.Unmarshal(out, &env) == nil
					if len(env.Data.Changes) < 50 {
						cursor = since // the end: from the start again
					} else {
						cursor = env.Data.NextCursor
					}
				} else if page++; page > lastPage {
					page = 1
				}
				mu.Lock()
				r.pages++
				if !ok {
					r.errors++
				}
				r.lat = append(r.lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.secs += time.Since(start).Seconds()
}

type report struct {
	cfg     config
	machine string
	commit  string
	phases  []*phase
	feed    []*feedResult
	batch   *batchResult
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "## Webhooks (issue 35): commit %s, %s\n\n", r.commit, r.machine)
	fmt.Fprintf(w, "%d endpoints (one receiver on loopback, a path each), %d job changes/s for %s per phase through the gateway.\n\n",
		r.cfg.Endpoints, r.cfg.Rate, r.cfg.Duration)
	fmt.Fprintln(w, "| phase | changes (errors) | events | deliveries/s during load | delivered/expected | p50 | p95 | p99 | max | lost | dupes | retried receipts | pending at load end | drained after | load (1, 5, 15 min) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.phases {
		fmt.Fprintf(w, "| %s | %d (%d) | %d | %.0f | %d/%d | %v | %v | %v | %v | %d | %d | %d | %d | %v | %s |\n",
			p.name, p.changes, p.errors, p.events, p.rate, p.received, p.expected, rd(pct(p.lat, 50)), rd(pct(p.lat, 95)), rd(pct(p.lat, 99)),
			rd(pct(p.lat, 100)), p.lost, p.dupes, p.retried, p.backlogAtEnd, p.drained, strings.Join(p.load[:], " "))
	}
	for _, p := range r.phases {
		if p.firstErr != "" {
			fmt.Fprintf(w, "\n%s: first change error: %s\n", p.name, p.firstErr)
		}
		if p.failing >= 0 {
			fmt.Fprintf(w, "\n%s: the failing endpoint got %d requests (all answered 500).\n", p.name, p.failingReceipt)
		}
	}
	if len(r.phases) == 2 {
		a, b := pct(r.phases[0].lat, 95), pct(r.phases[1].lat, 95)
		if a > 0 {
			fmt.Fprintf(w, "\nThe others' p95 with one endpoint answering 500 / without: %v / %v = %.2f\n", rd(b), rd(a), float64(b)/float64(a))
		}
	}
	for _, p := range r.phases {
		fmt.Fprintf(w, "\nCPU during %q (load and drain, %s): %s\n", p.name, p.sent+p.drained, cpuLine(p.cpu))
	}
	if r.batch != nil {
		r.batch.print(w, r.cfg.Endpoints)
	}
	if len(r.feed) > 0 {
		fmt.Fprintln(w, "\n| feed row (same key, 50 a page, 4 clients, 3 interleaved rounds) | pages/s | p50 | p95 | errors |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, f := range r.feed {
			slices.Sort(f.lat)
			fmt.Fprintf(w, "| %s | %.0f | %v | %v | %d |\n", f.name, float64(f.pages)/f.secs, rd(pct(f.lat, 50)), rd(pct(f.lat, 95)), f.errors)
		}
		if r.feed[1].pages > 0 {
			fmt.Fprintf(w, "\nchanges feed / list pages per second: %.2f\n", (float64(r.feed[0].pages)/r.feed[0].secs)/(float64(r.feed[1].pages)/r.feed[1].secs))
		}
	}
}

func rd(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Microsecond)
}

func loadavg() [3]string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	var out [3]string
	for i := 0; i < 3 && i < len(f); i++ {
		out[i] = f[i]
	}
	return out
}

func machine(ctx context.Context) string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(l[strings.IndexByte(l, ':')+1:])
				break
			}
		}
	}
	l := loadavg()
	return fmt.Sprintf("%d cores (%s), load before %s", runtime.NumCPU(), cpu, strings.Join(l[:], " "))
}

func gitCommit(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output()
	return strings.TrimSpace(string(out)), err
}

// cpuByProcess sums user+system CPU time by command name over /proc.
func cpuByProcess() map[string]time.Duration {
	out := map[string]time.Duration{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		name := string(b[i+1 : j])
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[name] += time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
	}
	return out
}

func cpuDelta(a, b map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range b {
		if d := v - a[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func cpuLine(m map[string]time.Duration) string {
	type kv struct {
		k string
		v time.Duration
	}
	var l []kv
	for k, v := range m {
		if v >= time.Second {
			l = append(l, kv{k, v})
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	var parts []string
	for _, e := range l[:min(len(l), 8)] {
		parts = append(parts, fmt.Sprintf("%s %.0fs", e.k, e.v.Seconds()))
	}
	return strings.Join(parts, ", ")
}
