package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// services the benchmark starts: the ones its rows reach.
var services = []string{"directory", "jobs", "gateway"}

type bench struct {
	cfg     config
	s       *suite.Suite
	db      *pgtest.DB
	monitor *pgx.Conn // on the server's maintenance database, so it is no backend of ours
	data    *pgx.Conn // on the benchmark database
	dir     string
	codec   *identity.Codec
	key     string
	keyID   int64
	seq     int
	client  *http.Client
	// hop, when set, lists the processes measured as the gateway (the bare
	// proxy's or nginx's runs).
	hop func() []int

	rep report
}

func run(ctx context.Context, cfg config) error {
	for _, tool := range []string{"wrk", "pgbench"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (scripts/bench.sh installs it)", tool)
		}
	}
	b := &bench{cfg: cfg, client: &http.Client{Timeout: 30 * time.Second}}
	b.rep.start = time.Now()
	b.rep.cfg = cfg
	b.rep.machine = describeMachine(ctx)
	var err error
	if b.dir, err = os.MkdirTemp("", "coworkjobs-bench"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	defer suite.Cleanup()

	seeds := [][]string{
		{"directory-seed", "synthetic", "-cities", strconv.Itoa(cfg.Cities), "-spaces", strconv.Itoa(cfg.Spaces), "-reset"},
		{"jobs-seed", "synthetic", "-jobs", strconv.Itoa(cfg.Jobs)},
	}
	if cfg.Reuse != "" {
		// Seeding a million jobs takes minutes; measuring one change
		// against the same data set need not repeat it.
		b.db, err = pgtest.Existing(cfg.Reuse)
		seeds, cfg.Keep = [][]string{}, true
	} else {
		b.db, err = pgtest.Create("bench")
	}
	if err != nil {
		return err
	}
	if cfg.Keep {
		b.note("database %s is kept", b.db.Name)
	} else {
		defer func() {
			if err := b.db.Drop(); err != nil {
				b.note("drop database %s: %v", b.db.Name, err)
			}
		}()
	}
	b.note("building and starting %s with %d jobs, %d cities, %d spaces", strings.Join(services, ", "), cfg.Jobs, cfg.Cities, cfg.Spaces)
	seedStart := time.Now()
	redisURL, err := benchRedis()
	if err != nil {
		return err
	}
	memLimits, err := chartMemLimits()
	if err != nil {
		return err
	}
	b.rep.memLimits = memLimits
	b.s, err = suite.Start(ctx, suite.Options{
		Name: "bench", DatabaseURL: b.db.URL, RedisURL: redisURL, Services: services, Admin: true, Pprof: cfg.ProfileRow != "",
		Seeds: seeds, ServiceEnv: memLimits,
		// The read limiters stay on (every keyed or public GET still pays its
		// Redis check, as in production) with budgets no row can exhaust.
		Env: append([]string{"JOBS_PAGINATION_ENABLED=true", "READ_RATE_LIMIT_PER_MINUTE=100000000",
			"PUBLIC_READ_RATE_LIMIT_PER_MINUTE=100000000"}, cfg.Env...),
		Out: os.Stderr,
	})
	if err != nil {
		return err
	}
	defer b.s.Stop()
	b.note("suite up and seeded in %s", time.Since(seedStart).Round(time.Second))

	if b.monitor, err = pgx.Connect(ctx, pgtest.BaseURL()); err != nil {
		return err
	}
	defer b.monitor.Close(context.Background())
	if b.data, err = pgx.Connect(ctx, b.db.URL); err != nil {
		return err
	}
	defer b.data.Close(context.Background())
	if err := b.settle(ctx); err != nil {
		return err
	}
	if b.codec, err = identity.NewCodec(b.envValue("INTERNAL_IDENTITY_SECRET")); err != nil {
		return err
	}
	if err := b.createKey(ctx); err != nil {
		return err
	}
	if err := b.measureIdle(); err != nil {
		return err
	}
	ds, err := b.pickData(ctx)
	if err != nil {
		return err
	}
	b.rep.data = ds
	if cfg.Plans != "" {
		return b.writePlans(ctx, ds, cfg.Plans)
	}
	b.rep.pool = b.dbMaxConns()
	if err := b.runMain(ctx, ds); err != nil {
		return err
	}
	if len(cfg.Growth) > 0 {
		if err := b.runGrowth(ctx, ds); err != nil {
			return err
		}
	}
	if cfg.ProfileRow == "end" {
		// What each service still holds after every row: what grew over the run.
		for _, name := range []string{"gateway", "jobs", "directory"} {
			if err := b.fetchProfile(ctx, name, "heap", name+"-end.heap"); err != nil {
				b.note("heap profile %s: %v", name, err)
			}
		}
	}
	b.rep.end = time.Now()
	b.rep.loadAfter = loadAverage()
	md := b.rep.markdown()
	fmt.Print(md)
	if cfg.Out != "" {
		if err := os.WriteFile(cfg.Out, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if regs := b.rep.regressions(); len(regs) > 0 {
		return fmt.Errorf("%d targets met in the run of record are missed now (the report's first lines)", len(regs))
	}
	return nil
}

// benchRedis is the Redis database of the bench's suite: its own (no test of
// the repository uses database 14), on the server the tests use, so that
// Redis's CPU is measured as before. The change versions (libs/changes) are
// not under REDIS_KEY_PREFIX: on the shared database, every suite that other
// tests on this machine start bumps them (at each jobs start, each job
// written), and the cached phase would measure those misses (it did: a
// 304 row of hits and misses).
func benchRedis() (string, error) {
	u, err := url.Parse(suite.EnvOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		return "", fmt.Errorf("TEST_REDIS_URL: %w", err)
	}
	u.Path = "/14"
	return u.String(), nil
}

func (b *bench) note(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func (b *bench) envValue(name string) string {
	v := ""
	for _, kv := range b.s.Env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as in exec
		}
	}
	return v
}

// settle leaves the freshly seeded database as a running system keeps it
// before any measured row (issue 48: a short run measured right after
// seeding put autovacuum's work in row d): every table vacuumed and
// analysed, a checkpoint (the seed's dirty pages written now, not during a
// row), and no autovacuum worker left on it. Autovacuum may still start
// during a row (row d's inserts pass its insert threshold on a small data
// set): its CPU is then counted apart ("autovacuum"), not as the row's.
func (b *bench) settle(ctx context.Context) error {
	start := time.Now()
	for _, q := range []string{`VACUUM ANALYZE`, `CHECKPOINT`} {
		if _, err := b.data.Exec(ctx, q); err != nil {
			return fmt.Errorf("settle: %s: %w", q, err)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		var n int
		if err := b.monitor.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = $1`,
			b.db.Name).Scan(&n); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.note("settle: %d autovacuum workers still on %s after 2 minutes; their CPU is counted apart", n, b.db.Name)
			break
		}
	}
	if b.rep.settled == 0 { // the first: before the main rows
		b.rep.settled = time.Since(start)
	}
	return nil
}

// createKey makes a trusted-importer key with a budget no row can exhaust:
// the rate limiter still runs on every write, it just never says no.
func (b *bench) createKey(ctx context.Context) error {
	out, err := b.s.Run(ctx, "gateway-keys", "create", "-name", "bench", "-scopes", "read,write",
		"-trusted-importer", "-rate-limit", "100000000", "-json")
	if err != nil {
		return fmt.Errorf("gateway-keys create: %w: %s", err, out)
	}
	var k struct {
		ID  int64  `json:"id"`
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		return fmt.Errorf("gateway-keys create printed %q", out)
	}
	b.key, b.keyID = k.Key, k.ID
	return nil
}

// identityHeader is what the gateway would send for the bench key.
func (b *bench) identityHeader() (string, error) {
	return b.codec.Sign(identity.Identity{Kind: identity.KindLive, KeyID: b.keyID, Scopes: []string{"read", "write"},
		TrustedImporter: true, ClientIP: "127.0.0.1"}, identity.MaxTTL)
}

func (b *bench) pids() map[string]int {
	m := map[string]int{}
	for _, name := range services {
		m[name] = b.s.PID(name)
	}
	return m
}

// measureIdle records each service's resident size before any load.
func (b *bench) measureIdle() error {
	time.Sleep(2 * time.Second) // let start-up garbage be collected
	b.rep.rssIdle = map[string]rss{}
	for name, pid := range b.pids() {
		r, err := readRSS(pid)
		if err != nil {
			return fmt.Errorf("rss of %s: %w", name, err)
		}
		b.rep.rssIdle[name] = r
	}
	return nil
}

// cpuGroups are the processes whose CPU a request costs. PostgreSQL is the
// backends of the benchmark database plus the server's own processes (WAL
// writer, checkpointer, ...), not the backends of other databases, which
// other people's tests may be using on a shared machine. Redis is the
// whole server.
func (b *bench) cpuGroups(ctx context.Context, backend string) []cpuGroup {
	return []cpuGroup{
		{"gateway", func() []int {
			if b.hop != nil {
				return b.hop()
			}
			return []int{b.s.PID("gateway")}
		}},
		{"backend", func() []int { return []int{b.s.PID(backend)} }},
		{"postgres", func() []int { return b.postgresPIDs(ctx) }},
		{"redis", func() []int { return pidsByComm("redis-server") }},
		{"autovacuum", func() []int { return b.autovacuumPIDs(ctx) }},
	}
}

// autovacuumPIDs are the autovacuum workers on the bench's database: not
// the row's work, reported apart (settle). Those of other databases (other
// tests on a shared server) are not the bench's at all.
func (b *bench) autovacuumPIDs(ctx context.Context) []int {
	rows, err := b.monitor.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = $1`, b.db.Name)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out
}

func (b *bench) postgresPIDs(ctx context.Context) []int {
	// The server's own processes and the bench database's backends; not
	// autovacuum (counted apart) nor another database's backends.
	rows, err := b.monitor.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE (datname = $1 OR datname IS NULL AND backend_type <> 'client backend') AND backend_type <> 'autovacuum worker'
		AND pid <> pg_backend_pid()`, b.db.Name)
	if err != nil {
		b.note("pg_stat_activity: %v", err)
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(pids)+1)
	for _, p := range pids {
		out = append(out, int(p))
	}
	// The postmaster forks every new backend: its CPU counts too.
	if len(out) > 0 {
		if ppid := parentPID(out[0]); ppid > 1 {
			out = append(out, ppid)
		}
	}
	return out
}

func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// counters are what a service has counted so far (its /metrics): answers by
// status class and, on the gateway with its response cache on, cacheable
// GETs by cache outcome.
type counters struct {
	classes map[string]int64 // http_requests_total by status_class
	cache   map[string]int64 // gateway_response_cache_total by outcome
}

func (b *bench) counters(name string) counters {
	resp, err := b.client.Get(b.s.Admin[name] + "/metrics")
	if err != nil {
		return counters{}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return counters{}
	}
	return counters{classes: countBy(bytes.NewReader(raw), "http_requests_total", "status_class"),
		cache: countBy(bytes.NewReader(raw), "gateway_response_cache_total", "outcome")}
}

// since is what was counted after before.
func (c counters) since(before counters) counters {
	sub := func(now, then map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range now {
			if d := v - then[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	return counters{classes: sub(c.classes, before.classes), cache: sub(c.cache, before.cache)}
}

func sum5xx(r io.Reader) int64 { return countBy(r, "http_requests_total", "status_class")["5xx"] }

// countBy adds up the samples of a counter by the value of one label, over
// all its other labels (every route and method).
func countBy(r io.Reader, metric, label string) map[string]int64 {
	n := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		labels, ok := strings.CutPrefix(line, metric+"{")
		if !ok {
			continue
		}
		i := strings.Index(labels, label+`="`)
		if i < 0 || (i > 0 && labels[i-1] != ',') {
			continue
		}
		value, _, _ := strings.Cut(labels[i+len(label)+2:], `"`)
		if j := strings.LastIndexByte(line, ' '); j > 0 {
			v, _ := strconv.ParseFloat(line[j+1:], 64)
			n[value] += v
		}
	}
	out := make(map[string]int64, len(n))
	for k, v := range n {
		out[k] = int64(v)
	}
	return out
}

// profile fetches a CPU profile of d from a service's admin port.
func (b *bench) profile(ctx context.Context, name string, d time.Duration) error {
	return b.fetchProfile(ctx, name, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), name+".pprof")
}

// fetchProfile saves /debug/pprof/<what> of a service into the profile directory.
func (b *bench) fetchProfile(ctx context.Context, name, what, file string) error {
	if err := os.MkdirAll(b.cfg.ProfileDir, 0o755); err != nil {
		return err
	}
	u := b.s.Pprof[name] + "/debug/pprof/" + what
	if what == "metrics" {
		u = b.s.Admin[name] + "/metrics"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := (&http.Client{Timeout: b.cfg.Duration + 30*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof %s %s: %s", name, what, resp.Status)
	}
	f, err := os.Create(filepath.Join(b.cfg.ProfileDir, file))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// probe sends one request of a load and checks that it succeeds with an
// envelope, so that no row measures a stream of errors.
func (b *bench) probe(ctx context.Context, base string, l load, i int) ([]byte, error) {
	resp, raw, err := b.send(ctx, base, l, i)
	if err != nil {
		return nil, err
	}
	var env struct {
		Success bool `json:"success"`
	}
	if resp.StatusCode >= 300 || json.Unmarshal(raw, &env) != nil || !env.Success {
		return raw, fmt.Errorf("%s %s: %d %.300s", l.Method, l.Requests[i%len(l.Requests)].Path, resp.StatusCode, raw)
	}
	return raw, nil
}

// send sends request i of a load once, as wrk would (a Unique load's %s
// replaced), and reads the whole answer.
// sentAnswer is what send read of an answer (its body is read and closed).
type sentAnswer struct {
	StatusCode int
	Header     http.Header
}

func (b *bench) send(ctx context.Context, base string, l load, i int) (sentAnswer, []byte, error) {
	r := l.Requests[i%len(l.Requests)]
	path, body := r.Path, r.Body
	if l.Unique {
		b.seq++
		token := fmt.Sprintf("probe-%d-%d", time.Now().UnixNano(), b.seq)
		path, body = strings.ReplaceAll(path, "%s", token), strings.ReplaceAll(body, "%s", token)
	}
	req, err := http.NewRequestWithContext(ctx, l.Method, base+path, strings.NewReader(body))
	if err != nil {
		return sentAnswer{}, nil, err
	}
	for k, v := range l.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return sentAnswer{}, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return sentAnswer{}, nil, err
	}
	return sentAnswer{StatusCode: resp.StatusCode, Header: resp.Header}, raw, nil
}
