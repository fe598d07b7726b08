package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// measurement is one measured wrk run and what it cost.
type measurement struct {
	wrk  wrkResult
	cpu  map[string]time.Duration // gateway, backend, postgres, redis
	rss  map[string]rss           // peak resident size by service during the run
	s5xx int64                    // 5xx answers the entry service counted
	// counted is what the entry service counted during the run (its answers
	// by status class; the gateway's response cache outcomes).
	counted counters
}

// cpuPerRequest is the summed CPU of the given groups per completed request.
func (m measurement) cpuPerRequest(groups ...string) time.Duration {
	if m.wrk.Requests == 0 {
		return 0
	}
	var t time.Duration
	for _, g := range groups {
		t += m.cpu[g]
	}
	return t / time.Duration(m.wrk.Requests)
}

type rowResult struct {
	row     row
	gateway measurement
	direct  *measurement
	proxy   *measurement // the direct load through a bare proxy (row a)
	rounds  *rounds      // row a again: gateway, direct and bare proxy interleaved
	pg      *pgbenchResult
	pgCPU   time.Duration // Postgres CPU during the pgbench run
	note    string
}

// measure runs l against base for the configured time after a warm-up,
// with CPU and memory watched. entry is the service whose 5xx are counted.
func (b *bench) measure(ctx context.Context, base string, l load, backend, entry string, conns, threads int, profileAs string) (measurement, string, error) {
	return b.measureFor(ctx, base, l, backend, entry, conns, threads, profileAs, b.cfg.Warmup, b.cfg.Duration)
}

// measureFor is measure with its own warm-up and measured time.
func (b *bench) measureFor(ctx context.Context, base string, l load, backend, entry string, conns, threads int, profileAs string,
	warm, dur time.Duration) (measurement, string, error) {
	if warm > 0 {
		if _, err := runWrk(ctx, wrkRun{BaseURL: base, Load: l, Conns: conns, Threads: threads, Duration: max(warm, time.Second),
			Timeout: 10 * time.Second, Nonce: b.nonce(), Dir: b.dir}); err != nil {
			return measurement{}, "", err
		}
	}
	groups := b.cpuGroups(ctx, backend)
	var wg sync.WaitGroup
	if profileAs != "" {
		for _, name := range []string{"gateway", backend} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.profile(ctx, name, dur); err != nil {
					b.note("profile %s: %v", name, err)
				}
			}()
		}
	}
	c0 := b.counters(entry)
	sampler := sampleRSS(b.pids(), 100*time.Millisecond)
	cpu := trackCPU(groups, 100*time.Millisecond)
	nonce := b.nonce()
	res, err := runWrk(ctx, wrkRun{BaseURL: base, Load: l, Conns: conns, Threads: threads, Duration: dur,
		Timeout: 10 * time.Second, Nonce: nonce, Dir: b.dir})
	used := cpu.Stop()
	peaks := sampler.Stop()
	wg.Wait()
	if err != nil {
		return measurement{}, "", err
	}
	counted := b.counters(entry).since(c0)
	return measurement{wrk: res, cpu: used, rss: peaks, s5xx: counted.classes["5xx"], counted: counted}, nonce, nil
}

func (b *bench) nonce() string {
	return "r" + strconv.FormatInt(time.Now().UnixNano()%1e10, 36) + strconv.Itoa(b.seqNext())
}

// measureGateway runs r's Setup, probes its first requests for a success
// envelope (when probe), and measures it through the gateway, CPU-profiled
// when it is the -profile row.
func (b *bench) measureGateway(ctx context.Context, r row, probe bool) (measurement, string, error) {
	b.note("row %s: %s", r.ID, r.Name)
	gw := b.s.URL["gateway"]
	if r.Setup != nil {
		if err := r.Setup(ctx, gw, r.Load); err != nil {
			return measurement{}, "", fmt.Errorf("row %s setup: %w", r.ID, err)
		}
	}
	if probe {
		for i := range min(len(r.Load.Requests), 4) {
			if _, err := b.probe(ctx, gw, r.Load, i); err != nil {
				return measurement{}, "", fmt.Errorf("row %s probe: %w", r.ID, err)
			}
		}
	}
	profile := ""
	if b.cfg.ProfileRow == r.ID {
		profile = r.ID
	}
	m, nonce, err := b.measure(ctx, gw, r.Load, r.Backend, "gateway", b.cfg.Conns, b.cfg.Threads, profile)
	if err != nil {
		return m, nonce, fmt.Errorf("row %s: %w", r.ID, err)
	}
	return m, nonce, nil
}

// runRow measures one row through the gateway, then its ceilings.
func (b *bench) runRow(ctx context.Context, r row) (rowResult, error) {
	res := rowResult{row: r}
	m, nonce, err := b.measureGateway(ctx, r, true)
	if err != nil {
		return res, err
	}
	res.gateway = m
	b.addLoadRSS(m.rss)
	if r.Load.Unique {
		// Nothing acknowledged is lost: every 2xx answer is a stored job.
		var stored int64
		sep := "-"
		if r.Load.Words {
			sep = "x"
		}
		if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.jobs WHERE external_url LIKE $1`,
			"https://jobs.bench.example/"+nonce+sep+"%").Scan(&stored); err != nil {
			return res, err
		}
		acked := m.wrk.Requests - m.wrk.Status
		res.note = fmt.Sprintf("%d acknowledged, %d stored", acked, stored)
		if stored < acked {
			return res, fmt.Errorf("row %s: %d creates acknowledged but %d stored", r.ID, acked, stored)
		}
	}
	if r.Direct {
		signed, err := b.identityHeader()
		if err != nil {
			return res, err
		}
		l := r.Load
		l.Headers = map[string]string{"X-Coworkjobs-Identity": signed}
		for k, v := range r.Load.Headers {
			if k != "X-API-Key" {
				l.Headers[k] = v
			}
		}
		if _, err := b.probe(ctx, b.s.URL[r.Backend], l, 0); err != nil {
			return res, fmt.Errorf("row %s direct probe: %w", r.ID, err)
		}
		dm, _, err := b.measure(ctx, b.s.URL[r.Backend], l, r.Backend, r.Backend, b.cfg.Conns, b.cfg.Threads, "")
		if err != nil {
			return res, fmt.Errorf("row %s direct: %w", r.ID, err)
		}
		res.direct = &dm
		b.addLoadRSS(dm.rss)
		if r.ID == "a" || r.ID == "e1" {
			if err := b.bareProxyAndRounds(ctx, r, l, &res); err != nil {
				return res, fmt.Errorf("row %s bare proxy: %w", r.ID, err)
			}
		}
	}
	if r.SQL != nil {
		groups := b.cpuGroups(ctx, r.Backend)[2:3]
		cpu := trackCPU(groups, 100*time.Millisecond)
		pr, err := runPgbench(ctx, b.dir, b.db.URL, "jobs", r.SQL, b.dbMaxConns(), b.cfg.Duration)
		used := cpu.Stop()
		if err != nil {
			return res, fmt.Errorf("row %s pgbench: %w", r.ID, err)
		}
		res.pg = &pr
		res.pgCPU = used["postgres"]
	}
	return res, nil
}

// dbMaxConns is the pool size of a service: pgbench gets as many
// connections as the jobs service may use.
func (b *bench) dbMaxConns() int {
	if n, err := strconv.Atoi(b.envValue("DB_MAX_CONNS")); err == nil && n > 0 {
		return n
	}
	return 10
}

func (b *bench) addLoadRSS(peaks map[string]rss) {
	if b.rep.rssLoad == nil {
		b.rep.rssLoad = map[string]rss{}
	}
	for k, v := range peaks {
		b.rep.rssLoad[k] = maxRSS(b.rep.rssLoad[k], v)
	}
}

// overload opens far more connections than the services will serve at
// once and records what they do: memory must stay capped, and every request
// must end (an answer or a timeout envelope), none hang.
func (b *bench) overload(ctx context.Context, r row) (overloadResult, error) {
	b.note("overload: %s with %d connections", r.ID, b.cfg.OverloadConns)
	if b.cfg.ProfileRow == "overload" {
		// Heap profiles late in the run, when the most is in flight.
		go func() {
			time.Sleep(b.cfg.Warmup + b.cfg.Duration*3/4)
			for _, name := range []string{"gateway", r.Backend} {
				if err := b.fetchProfile(ctx, name, "heap", name+"-overload-"+r.ID+".heap"); err != nil {
					b.note("heap profile %s: %v", name, err)
				}
				if err := b.fetchProfile(ctx, name, "metrics", name+"-overload-"+r.ID+".metrics"); err != nil {
					b.note("metrics %s: %v", name, err)
				}
				if err := b.fetchProfile(ctx, name, "goroutine", name+"-overload-"+r.ID+".goroutine"); err != nil {
					b.note("goroutine profile %s: %v", name, err)
				}
			}
		}()
	}
	m, _, err := b.measure(ctx, b.s.URL["gateway"], r.Load, r.Backend, "gateway", b.cfg.OverloadConns, 2, "")
	if err != nil {
		return overloadResult{}, err
	}
	if b.rep.rssOverload == nil {
		b.rep.rssOverload = map[string]rss{}
	}
	for k, v := range m.rss {
		b.rep.rssOverload[k] = maxRSS(b.rep.rssOverload[k], v)
	}
	return overloadResult{row: r.ID, conns: b.cfg.OverloadConns, m: m}, nil
}

type overloadResult struct {
	row   string
	conns int
	m     measurement
}

// setPagination restarts the jobs service with server-side pagination on
// or off (the spec makes it a server setting, so (c) needs it off).
func (b *bench) setPagination(ctx context.Context, on bool) error {
	b.s.Env = append(b.s.Env, "JOBS_PAGINATION_ENABLED="+strconv.FormatBool(on))
	if err := b.s.Terminate("jobs"); err != nil {
		return err
	}
	if err := b.s.Start(ctx, "jobs"); err != nil {
		return err
	}
	// The gateway's pooled connections to the old process are dead; the first
	// requests find that out (503) and the pool redials. Drain them before
	// measuring, without counting them anywhere.
	for i := 0; i < 200; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.s.URL["gateway"]+"/v2/jobs?city=none&page=1", nil)
		req.Header.Set("X-API-Key", b.key)
		if resp, err := b.client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("jobs restarted but the gateway does not reach it")
}

func (b *bench) runMain(ctx context.Context, d dataset) error {
	b.rep.loadBefore = loadAverage()
	// The ceiling of HTTP on this machine: a bare Fiber app.
	if b.cfg.wants("hello") {
		b.note("ceiling: bare Fiber hello-world")
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		hello, err := startSelf(ctx, "http://"+addr+"/", "hello", addr)
		if err != nil {
			return err
		}
		m, _, err := b.measure(ctx, "http://"+addr, load{Method: "GET", Requests: []request{{Path: "/"}}}, "jobs", "gateway", b.cfg.Conns, b.cfg.Threads, "")
		stopProcess(hello)
		if err != nil {
			return fmt.Errorf("hello: %w", err)
		}
		b.rep.hello = &m
	}

	rows, err := b.listRows(ctx, d)
	if err != nil {
		return err
	}
	rows = append(rows, b.writeRows(d)...)
	rows = append(rows, b.readRows(d)...)
	var aRow, hRow, b1Row *row
	for i, r := range rows {
		switch r.ID {
		case "a":
			aRow = &rows[i]
		case "h":
			hRow = &rows[i]
		case "b1":
			b1Row = &rows[i]
		}
		if !b.cfg.wants(r.ID) {
			continue
		}
		res, err := b.runRow(ctx, r)
		if err != nil {
			return err
		}
		b.rep.rows = append(b.rep.rows, res)
	}
	if b.cfg.wants("rate") {
		b.note("constant rate: %d req/s of row a for %s", b.cfg.Rate, b.cfg.Duration)
		rr := runRate(ctx, b.s.URL["gateway"], paths(aRow.Load), aRow.Load.Headers, b.cfg.Rate, b.cfg.Duration, 256)
		b.rep.rate = &rr
	}
	if err := b.runCachedPhase(ctx, b.cachedRows(*aRow, *hRow, *b1Row)); err != nil {
		return err
	}

	// (c) needs the jobs service without server-side pagination. The
	// overload runs come last, so that no other row inherits their memory.
	if b.cfg.wants("c") || b.cfg.wants("c$") || b.cfg.wants("overload") {
		if err := b.setPagination(ctx, false); err != nil {
			return err
		}
		c, err := b.streamRow(ctx, d, d.StreamCityMatches)
		if err != nil {
			return err
		}
		if b.cfg.wants("c") {
			res, err := b.runRow(ctx, c)
			if err != nil {
				return err
			}
			b.rep.rows = append(b.rep.rows, res)
		}
		// The unpaginated list from the cache: kept once relayed whole.
		cHit := row{ID: "c$", Name: "row c again and again (cache hits)", Backend: "jobs", Of: "c", Load: c.Load}
		if err := b.runCachedPhase(ctx, []row{cHit}); err != nil {
			return err
		}
		if b.cfg.wants("overload") {
			o, err := b.overload(ctx, c)
			if err != nil {
				return err
			}
			b.rep.overloads = append(b.rep.overloads, o)
		}
		if err := b.setPagination(ctx, true); err != nil {
			return err
		}
	}
	if b.cfg.wants("overload") {
		o, err := b.overload(ctx, *aRow)
		if err != nil {
			return err
		}
		b.rep.overloads = append(b.rep.overloads, o)
	}
	// Last: its year of roll-ups and its batches' jobs are no other row's data.
	return b.runStatsPhase(ctx, d)
}

// cacheMB is the gateway's response cache in the cached phase.
const cacheMB = 16

// runCachedPhase restarts the gateway with its response cache on
// (RESPONSE_CACHE_MB), measures the wanted rows of the cached phase and
// restarts it as it was, so that every other row measures the gateway
// without the cache.
func (b *bench) runCachedPhase(ctx context.Context, rows []row) error {
	var wanted []row
	for _, r := range rows {
		if b.cfg.wants(r.ID) {
			wanted = append(wanted, r)
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	saved := b.s.Env
	b.s.Env = append(slices.Clip(saved), "RESPONSE_CACHE_MB="+strconv.Itoa(cacheMB), "RESPONSE_CACHE_STORE="+b.cfg.CacheStore)
	b.note("cached phase: gateway restarted with RESPONSE_CACHE_MB=%d RESPONSE_CACHE_STORE=%s", cacheMB, b.cfg.CacheStore)
	if err := b.restartGateway(ctx, true); err != nil {
		return err
	}
	for _, r := range wanted {
		res, err := b.runCached(ctx, r)
		if err != nil {
			return err
		}
		b.rep.cached = append(b.rep.cached, res)
	}
	b.s.Env = saved
	b.note("cached phase done: gateway restarted as it was")
	return b.restartGateway(ctx, false)
}

// restartGateway restarts the gateway with the suite's environment and
// checks that its answers carry an ETag if and only if its response cache
// is meant to be on.
func (b *bench) restartGateway(ctx context.Context, cached bool) error {
	if err := b.s.Terminate("gateway"); err != nil {
		return err
	}
	if err := b.s.Start(ctx, "gateway"); err != nil {
		return err
	}
	b.client.CloseIdleConnections() // to the old process
	l := load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: "/v2/jobs?city=none&page=1"}}}
	resp, raw, err := b.send(ctx, b.s.URL["gateway"], l, 0)
	if err != nil {
		return fmt.Errorf("gateway restarted: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("gateway restarted: GET %s: %d %.300s", l.Requests[0].Path, resp.StatusCode, raw)
	}
	if etag := resp.Header.Get("ETag"); (etag != "") != cached {
		return fmt.Errorf("gateway restarted with the response cache on: %t, but GET %s answered ETag %q", cached, l.Requests[0].Path, etag)
	}
	return nil
}

// runCached measures one row of the cached phase through the gateway. Its
// memory is not the gateway's of the other rows (the cache holds up to
// cacheMB): it is kept apart.
func (b *bench) runCached(ctx context.Context, r row) (rowResult, error) {
	res := rowResult{row: r}
	// The phase's only Setup (n) checks each of its answers itself: a 304
	// has no envelope to probe.
	m, _, err := b.measureGateway(ctx, r, r.Setup == nil)
	if err != nil {
		return res, err
	}
	res.gateway = m
	if b.rep.rssCached == nil {
		b.rep.rssCached = map[string]rss{}
	}
	for k, v := range m.rss {
		b.rep.rssCached[k] = maxRSS(b.rep.rssCached[k], v)
	}
	return res, nil
}

func paths(l load) []string {
	out := make([]string, len(l.Requests))
	for i, r := range l.Requests {
		out[i] = r.Path
	}
	return out
}

// growthPoint is the list and search rows at one data size, and the
// write row d (words: the typo dictionary's size before it).
type growthPoint struct {
	jobs, active int
	words        int
	created      int // creates with words of their own before d (-dictionary)
	rows         []rowResult
	streamRSS    map[string]rss
	write        *rowResult
}

// runGrowth reseeds the jobs at each size and reruns (a), the searches
// (b1–b6) and (c) with their pgbench ceilings; the queries stay the same,
// so the matches grow with the data.
func (b *bench) runGrowth(ctx context.Context, d dataset) error {
	saved := b.cfg.Rows
	defer func() { b.cfg.Rows = saved }()
	// The memory targets judge the run's own size: a million jobs' pages and
	// streams are the curve's (its table reports the stream's RSS).
	load := maps.Clone(b.rep.rssLoad)
	defer func() { b.rep.rssLoad = load }()
	// The rows' own creates would otherwise count as data (and match the
	// common search term); the curve is of the generated set alone.
	if _, err := b.data.Exec(ctx, `DELETE FROM jobs.jobs WHERE key_id = $1`, b.keyID); err != nil {
		return fmt.Errorf("delete the rows' own jobs: %w", err)
	}
	for _, n := range b.cfg.Growth {
		b.note("growth: %d jobs", n)
		if out, err := b.s.Run(ctx, "jobs-seed", "synthetic", "-jobs", strconv.Itoa(n)); err != nil {
			return fmt.Errorf("jobs-seed synthetic -jobs %d: %w: %s", n, err, out)
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		p := growthPoint{jobs: n}
		if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.jobs WHERE status = 'active' AND expiration_date > now()`).Scan(&p.active); err != nil {
			return err
		}
		gd := d
		if err := b.countMatches(ctx, &gd); err != nil {
			return err
		}
		rows, err := b.listRows(ctx, gd)
		if err != nil {
			return err
		}
		for _, r := range rows {
			r.Direct = false
			res, err := b.runRow(ctx, r)
			if err != nil {
				return err
			}
			p.rows = append(p.rows, res)
		}
		if err := b.setPagination(ctx, false); err != nil {
			return err
		}
		var streamMatches int
		if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.jobs WHERE status = 'active' AND expiration_date > now() AND city_slug = $1`,
			d.StreamCity).Scan(&streamMatches); err != nil {
			return err
		}
		c, err := b.streamRow(ctx, d, streamMatches)
		if err != nil {
			return err
		}
		c.Direct = false
		res, err := b.runRow(ctx, c)
		if err != nil {
			return err
		}
		p.rows = append(p.rows, res)
		p.streamRSS = res.gateway.rss
		if err := b.setPagination(ctx, true); err != nil {
			return err
		}
		if err := b.growthWrite(ctx, d, &p); err != nil {
			return err
		}
		b.rep.growth = append(b.rep.growth, p)
	}
	if b.cfg.Dictionary > 0 && len(b.rep.growth) > 0 {
		return b.dictionaryGrowth(ctx, d)
	}
	return nil
}

// growthWrite runs row d through the gateway at p's size, then removes its
// creates, which are not the size's data.
func (b *bench) growthWrite(ctx context.Context, d dataset, p *growthPoint) error {
	if err := b.data.QueryRow(ctx, `SELECT count(*) FROM jobs.search_words`).Scan(&p.words); err != nil {
		return err
	}
	w := b.writeRows(d)[0]
	w.Direct = false
	res, err := b.runRow(ctx, w)
	if err != nil {
		return err
	}
	p.write = &res
	if _, err := b.data.Exec(ctx, `DELETE FROM jobs.jobs WHERE key_id = $1`, b.keyID); err != nil {
		return fmt.Errorf("delete row d's creates: %w", err)
	}
	return nil
}

// dictionaryGrowth makes -dictionary creates with words of their own at the
// last size (row d's runs, unmeasured), then measures row d again: the typo
// dictionary (search_words) and the title lexemes grow by a word a create.
func (b *bench) dictionaryGrowth(ctx context.Context, d dataset) error {
	last := b.rep.growth[len(b.rep.growth)-1]
	b.note("growth: %d creates with words of their own", b.cfg.Dictionary)
	w := b.writeRows(d)[0]
	w.Direct, w.Load.Words = false, true
	created := 0
	for created < b.cfg.Dictionary {
		res, err := b.runRow(ctx, w)
		if err != nil {
			return err
		}
		if res.gateway.wrk.Requests == 0 {
			return errors.New("dictionary growth: row d created nothing")
		}
		created += int(res.gateway.wrk.Requests)
	}
	// The jobs go, their words stay: the size is the last one's again.
	if _, err := b.data.Exec(ctx, `DELETE FROM jobs.jobs WHERE key_id = $1`, b.keyID); err != nil {
		return fmt.Errorf("delete the dictionary's creates: %w", err)
	}
	if err := b.settle(ctx); err != nil {
		return err
	}
	p := growthPoint{jobs: last.jobs, active: last.active, created: created}
	if err := b.growthWrite(ctx, d, &p); err != nil {
		return err
	}
	b.rep.growth = append(b.rep.growth, p)
	return nil
}

// bareProxyAndRounds sends the direct load through a bare proxy in front of
// the backend: what the HTTP hop alone costs, the ceiling of any gateway.
// Then, with -rounds, it measures the gateway, the backend directly, the
// bare proxy and nginx (what an operator would otherwise put in front) in
// short runs taken in turn (the order rotated each round, so no target
// always follows the same one): anything that drifts on the machine during
// the row then weighs on all of them alike, where the sequential runs above
// each saw a different stretch of time. Without nginx the rounds go on
// without it, and the report says why.
func (b *bench) bareProxyAndRounds(ctx context.Context, r row, direct load, res *rowResult) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	backend := strings.TrimPrefix(b.s.URL[r.Backend], "http://")
	proxy := "http://" + addr
	cmd, err := startSelf(ctx, proxy+"/v2/health", "proxy", addr, backend)
	if err != nil {
		return err
	}
	defer stopProcess(cmd)
	if _, err := b.probe(ctx, proxy, direct, 0); err != nil {
		return err
	}
	defer func() { b.hop = nil }()
	proxyPIDs := func() []int { return []int{cmd.Process.Pid} }
	b.hop = proxyPIDs
	m, _, err := b.measure(ctx, proxy, direct, r.Backend, r.Backend, b.cfg.Conns, b.cfg.Threads, "")
	if err != nil {
		return err
	}
	res.proxy = &m
	b.hop = nil
	if b.cfg.Rounds < 1 {
		return nil
	}
	type target struct {
		name, base, entry string
		l                 load
		hop               func() []int
	}
	targets := []target{
		{"gateway", b.s.URL["gateway"], "gateway", r.Load, nil},
		{"direct", b.s.URL[r.Backend], r.Backend, direct, nil},
		{"bare proxy", proxy, r.Backend, direct, proxyPIDs},
	}
	rs := &rounds{row: r.ID, n: b.cfg.Rounds, each: b.cfg.RoundDuration}
	if ng, err := b.startNginx(ctx, backend, direct); err != nil {
		rs.nginxMissing = err.Error()
		b.note("row %s: nginx left out of the rounds: %v", r.ID, err)
	} else {
		defer func() {
			if logged := ng.Stop(); logged != "" {
				b.note("nginx logged: %s", logged)
			}
		}()
		rs.nginxWorkers = nginxWorkers()
		targets = append(targets, target{"nginx", ng.url, r.Backend, direct, ng.pids})
	}
	for _, t := range targets {
		rs.names = append(rs.names, t.name)
	}
	rs.sum = make([]measurement, len(targets))
	rs.rps = make([][]float64, len(targets))
	b.note("row %s: %d interleaved rounds of %s, %s each", r.ID, rs.n, strings.Join(rs.names, ", "), rs.each)
	for i := range rs.n {
		// The direct rows' signed identity lives a minute, and the rounds
		// may take longer (-round-duration): each round signs it anew.
		signed, err := b.identityHeader()
		if err != nil {
			return err
		}
		direct.Headers["X-Coworkjobs-Identity"] = signed
		for j := range targets {
			k := (i + j) % len(targets)
			t := targets[k]
			b.hop = t.hop
			m, _, err := b.measureFor(ctx, t.base, t.l, r.Backend, t.entry, b.cfg.Conns, b.cfg.Threads, "", 0, rs.each)
			b.hop = nil
			if err != nil {
				return fmt.Errorf("round %d: %w", i+1, err)
			}
			rs.add(k, m)
		}
	}
	res.rounds = rs
	return nil
}

// startedNginx is the bench's own nginx in front of a backend.
type startedNginx struct {
	*nginxProc
	url string
}

// startNginx starts nginx in front of backend and checks that it relays the
// direct load as the backend answers it.
func (b *bench) startNginx(ctx context.Context, backend string, direct load) (startedNginx, error) {
	addr, err := freeAddr()
	if err != nil {
		return startedNginx{}, err
	}
	url := "http://" + addr
	n, err := startNginx(ctx, url+"/v2/health", addr, backend, nginxWorkers())
	if err != nil {
		return startedNginx{}, err
	}
	if _, err := b.probe(ctx, url, direct, 0); err != nil {
		n.Stop()
		return startedNginx{}, fmt.Errorf("probe through nginx: %w", err)
	}
	return startedNginx{n, url}, nil
}

// rounds sums the interleaved runs of each target, in the order of names:
// gateway, direct, bare proxy, then nginx when it could be started.
type rounds struct {
	row          string // a or e1
	n            int
	each         time.Duration
	names        []string
	sum          []measurement
	rps          [][]float64 // each round's req/s, in round order
	nginxWorkers int
	nginxMissing string // why nginx is not among the targets
}

// target is the index of a named target, or -1.
func (rs *rounds) target(name string) int {
	for i, n := range rs.names {
		if n == name {
			return i
		}
	}
	return -1
}

func (rs *rounds) add(target int, m measurement) {
	s := &rs.sum[target]
	s.wrk.Requests += m.wrk.Requests
	s.wrk.DurationUS += m.wrk.DurationUS
	s.wrk.Status += m.wrk.Status
	s.wrk.Timeout += m.wrk.Timeout
	s.wrk.Connect += m.wrk.Connect
	s.wrk.Read += m.wrk.Read
	s.wrk.Write += m.wrk.Write
	s.s5xx += m.s5xx
	if s.cpu == nil {
		s.cpu = map[string]time.Duration{}
	}
	for g, d := range m.cpu {
		s.cpu[g] += d
	}
	rs.rps[target] = append(rs.rps[target], m.wrk.RPS())
}
