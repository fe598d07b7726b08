package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The job statistics' rows (issue 47) and the batch's (issue 46):
//
//   - go: GET /go/{job_ref} (click counted, 302) against GET /jobs/{id} (the
//     same look-up through the same gateway route kind, a plain 301, nothing
//     counted) at the same constant rate (-rate), interleaved;
//   - pv: the public job page with counting on, pv-off with the jobs service
//     restarted with STATS_COUNTING=false, interleaved;
//   - ys: one job's year of stats by week (GET /v2/jobs/{id}/stats) with a
//     year of daily roll-ups seeded for every job;
//   - batch: POST /v2/jobs/batch of 1 000 new jobs, from the POST to the GET
//     that says done, rows per second.
const (
	targetGoAddedP99  = 5 * time.Millisecond
	targetPageCost    = 0.05
	targetCounterDiff = 0.001
	targetYearStats   = 50 * time.Millisecond
	targetBatchRows   = 500.0
	statsJobs         = 64
	batchRows         = 1000
	batchRuns         = 3
	statsRounds       = 2
	statsReadRate     = 50 // req/s of the year-of-stats latency run: no queueing
	benchBrowserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
)

// statsGroup are the rows -rows stats selects.
var statsGroup = []string{"go", "pv", "ys", "batch"}

func init() { rowGroups["stats"] = statsGroup }

// statsReport is what the phase measured.
type statsReport struct {
	// goRuns and plainRuns are the constant-rate runs, in round order.
	goRuns, plainRuns []rateResult
	// pvOn and pvOff are the page's saturation runs, in round order.
	pvOn, pvOff []measurement
	pages       int
	// promViews and apiViews are the browser views of the last pv round
	// (its warm-up included) as the jobs service's counter and as the
	// stats API count them.
	promViews, apiViews int64
	// The year of stats: the roll-ups seeded and how long that took, the
	// read's plan, its saturation run and its unqueued latency run.
	dailyRows, denseRows int64
	seeded               time.Duration
	plan                 string
	ys                   *measurement
	ysRate               *rateResult
	// batches are the 1 000-row batches: wall time from the POST to the GET
	// that said done, and their counts.
	batches []batchRun
	// batchCPU is the CPU the batches took, by group (gateway, backend,
	// postgres, redis, autovacuum), over all runs.
	batchCPU map[string]time.Duration
}

type batchRun struct {
	took    time.Duration
	created int
	errors  int
	polls   int
}

// statsJob is one of the phase's jobs: posted by the bench key (whose stats
// it may read), with its page and apply link.
type statsJob struct {
	id   int64
	page string // /jobs/{slug}-{id}
	goTo string // /go/{job_ref}?src=page
}

var applyHref = regexp.MustCompile(`id="apply" href="([^"]+)"`)

// statsJobs posts the phase's jobs and reads each one's page and apply link
// as a browser would.
func (b *bench) statsJobs(ctx context.Context, d dataset) ([]statsJob, error) {
	gw := b.s.URL["gateway"]
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	l := load{Method: "POST", Headers: map[string]string{"X-API-Key": b.key, "Content-Type": "application/json"}}
	var jobs []statsJob
	for i := range statsJobs {
		l.Requests = []request{{Path: "/v2/jobs", Body: jobBody(d.CityID, "stats-"+run+"-"+strconv.Itoa(i))}}
		raw, err := b.probe(ctx, gw, l, 0)
		if err != nil {
			return nil, err
		}
		var created struct {
			Data struct {
				JobID int64 `json:"job_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &created); err != nil || created.Data.JobID == 0 {
			return nil, fmt.Errorf("create: %.300s", raw)
		}
		get := load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: "/v2/jobs/" + strconv.FormatInt(created.Data.JobID, 10)}}}
		raw, err = b.probe(ctx, gw, get, 0)
		if err != nil {
			return nil, err
		}
		var job struct {
			Data struct {
				URL string `json:"url"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &job); err != nil || !strings.Contains(job.Data.URL, "/jobs/") {
			return nil, fmt.Errorf("job %d: no page url: %.300s", created.Data.JobID, raw)
		}
		j := statsJob{id: created.Data.JobID, page: job.Data.URL[strings.Index(job.Data.URL, "/jobs/"):]}
		page := load{Method: "GET", Headers: map[string]string{"User-Agent": benchBrowserAgent}, Requests: []request{{Path: j.page}}}
		resp, body, err := b.send(ctx, gw, page, 0)
		if err != nil {
			return nil, err
		}
		m := applyHref.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			return nil, fmt.Errorf("page %s: %d, apply link found: %t", j.page, resp.StatusCode, m != nil)
		}
		href := strings.ReplaceAll(string(m[1]), "&amp;", "&")
		k := strings.Index(href, "/go/")
		if k < 0 {
			return nil, fmt.Errorf("page %s: the apply link %s is not /go/", j.page, href)
		}
		j.goTo = href[k:]
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// runStatsPhase measures the wanted rows of the phase.
func (b *bench) runStatsPhase(ctx context.Context, d dataset) error {
	if !slices.ContainsFunc(statsGroup, b.cfg.wants) {
		return nil
	}
	jobs, err := b.statsJobs(ctx, d)
	if err != nil {
		return fmt.Errorf("stats phase: %w", err)
	}
	sr := &statsReport{}
	b.rep.stats = sr
	if b.cfg.wants("go") {
		b.note("row go: GET /go/{job_ref} vs GET /jobs/{id} (301) at %d req/s, %d rounds of %s each", b.cfg.Rate, statsRounds, b.cfg.Duration)
		var goPaths, plainPaths []string
		for _, j := range jobs {
			goPaths = append(goPaths, j.goTo)
			plainPaths = append(plainPaths, "/jobs/"+strconv.FormatInt(j.id, 10))
		}
		h := map[string]string{"User-Agent": benchBrowserAgent}
		gw := b.s.URL["gateway"]
		for i := range statsRounds {
			// Alternate which goes first, so neither always follows the other.
			first, second := plainPaths, goPaths
			if i%2 == 1 {
				first, second = goPaths, plainPaths
			}
			r1 := runRate(ctx, gw, first, h, b.cfg.Rate, b.cfg.Duration, 256)
			r2 := runRate(ctx, gw, second, h, b.cfg.Rate, b.cfg.Duration, 256)
			if i%2 == 1 {
				r1, r2 = r2, r1
			}
			sr.plainRuns, sr.goRuns = append(sr.plainRuns, r1), append(sr.goRuns, r2)
		}
	}
	if b.cfg.wants("pv") {
		if err := b.pageViewRows(ctx, jobs, sr); err != nil {
			return err
		}
	}
	if b.cfg.wants("ys") {
		if err := b.yearOfStats(ctx, jobs, sr); err != nil {
			return err
		}
	}
	if b.cfg.wants("batch") {
		if err := b.batchRows(ctx, d, sr); err != nil {
			return err
		}
	}
	return nil
}

// setCounting restarts the jobs service with counting on or off.
func (b *bench) setCounting(ctx context.Context, on bool) error {
	b.s.Env = append(b.s.Env, "STATS_COUNTING="+strconv.FormatBool(on))
	return b.restartJobs(ctx)
}

// restartJobs restarts the jobs service with the suite's environment and
// waits until the gateway reaches it again.
func (b *bench) restartJobs(ctx context.Context) error {
	if err := b.s.Terminate("jobs"); err != nil {
		return err
	}
	if err := b.s.Start(ctx, "jobs"); err != nil {
		return err
	}
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

// pageViewRows measures the job page with counting on and off, interleaved
// (on, off, off, on: each restart of jobs is one round's boundary).
func (b *bench) pageViewRows(ctx context.Context, jobs []statsJob, sr *statsReport) error {
	l := load{Method: "GET", Headers: map[string]string{"User-Agent": benchBrowserAgent}}
	for _, j := range jobs {
		l.Requests = append(l.Requests, request{Path: j.page})
	}
	sr.pages = len(l.Requests)
	order := []bool{true, false, false, true}
	counting := true
	var apiBefore int64
	for i, on := range order {
		if on != counting {
			if err := b.setCounting(ctx, on); err != nil {
				return err
			}
			counting = on
		}
		last := i == len(order)-1
		if last {
			// The jobs service was just restarted: its counter starts at 0.
			var err error
			if apiBefore, err = b.apiViews(ctx, jobs); err != nil {
				return err
			}
		}
		id, name := "pv", "GET /jobs/{slug}-{id} (public job page, a browser), the view counted"
		if !on {
			id, name = "pv-off", "the same, jobs with STATS_COUNTING=false"
		}
		m, _, err := b.measureGateway(ctx, row{ID: id, Name: name, Backend: "jobs", Load: l}, false)
		if err != nil {
			return err
		}
		if m.counted.classes["2xx"] == 0 || m.wrk.Errors() > 0 {
			return fmt.Errorf("row %s: %d errors, answers by class %v", id, m.wrk.Errors(), m.counted.classes)
		}
		b.addLoadRSS(m.rss)
		if on {
			sr.pvOn = append(sr.pvOn, m)
		} else {
			sr.pvOff = append(sr.pvOff, m)
		}
		if last {
			if err := b.compareCounters(ctx, jobs, apiBefore, sr); err != nil {
				return err
			}
		}
	}
	return nil
}

// apiViews is the browser views of today (UTC) of jobs as the stats API
// reads them.
func (b *bench) apiViews(ctx context.Context, jobs []statsJob) (int64, error) {
	today := time.Now().UTC().Format(time.DateOnly)
	var n int64
	for _, j := range jobs {
		l := load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: fmt.Sprintf("/v2/jobs/%d/stats?from=%s&to=%s", j.id, today, today)}}}
		raw, err := b.probe(ctx, b.s.URL["gateway"], l, 0)
		if err != nil {
			return 0, err
		}
		var st struct {
			Data struct {
				Totals struct {
					Views int64 `json:"views"`
				} `json:"totals"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return 0, err
		}
		n += st.Data.Totals.Views
	}
	return n, nil
}

// compareCounters waits until the jobs service has written every counted
// event (jobs_stats_pending_events 0), then reads its counter of browser
// views and the API's views of the round.
func (b *bench) compareCounters(ctx context.Context, jobs []statsJob, apiBefore int64, sr *statsReport) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pending, views := b.statsMetrics()
		if pending == 0 {
			sr.promViews = views
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("row pv: %d events still pending after 30 s", pending)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the write in flight when pending became 0
	after, err := b.apiViews(ctx, jobs)
	sr.apiViews = after - apiBefore
	return err
}

// statsMetrics reads the jobs service's jobs_stats_pending_events and
// jobs_stats_events_total{agent="browser",kind="view"}.
func (b *bench) statsMetrics() (pending, views int64) {
	resp, err := b.client.Get(b.s.Admin["jobs"] + "/metrics")
	if err != nil {
		return -1, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "jobs_stats_pending_events "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			pending = int64(f)
		}
		if v, ok := strings.CutPrefix(line, `jobs_stats_events_total{agent="browser",kind="view"} `); ok {
			f, _ := strconv.ParseFloat(v, 64)
			views = int64(f)
		}
	}
	return pending, views
}

// yearOfStats seeds a year of daily roll-ups and measures one job's year
// by week: every job of the data gets one page-view row a week for a year
// (about 52 rows a job), the phase's jobs a dense year (every day, four
// channels, views, clicks, uniques, impressions and crawlers: 13 rows a
// day), then the read's plan and its times.
func (b *bench) yearOfStats(ctx context.Context, jobs []statsJob, sr *statsReport) error {
	b.note("row ys: seeding a year of daily roll-ups for every job")
	start := time.Now()
	if _, err := b.data.Exec(ctx, `INSERT INTO jobs.stats_daily (job_id, day, channel, kind, agent, events, uniques)
		SELECT j.id, d::date, 'page', 1, 0, 1 + (j.id % 17), 1 + (j.id % 11)
		FROM jobs.jobs j, generate_series(current_date - 364 + (j.id % 7)::int, current_date, interval '7 days') d
		ON CONFLICT DO NOTHING`); err != nil {
		return fmt.Errorf("seed weekly roll-ups: %w", err)
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	if _, err := b.data.Exec(ctx, `INSERT INTO jobs.stats_daily (job_id, day, channel, kind, agent, events, uniques)
		SELECT j, d::date, c.channel, c.kind, c.agent, 3 + (extract(doy FROM d)::int % 29), CASE WHEN c.agent = 0 AND c.kind < 3 THEN 2 ELSE 0 END
		FROM unnest($1::bigint[]) j, generate_series(current_date - 364, current_date, interval '1 day') d,
		(VALUES ('page', 1, 0), ('page', 2, 0), ('feed', 1, 0), ('feed', 2, 0), ('embed', 1, 0), ('embed', 2, 0),
		        ('alert', 1, 0), ('alert', 2, 0), ('', 1, 0), ('', 2, 0), ('feed', 3, 0), ('embed', 3, 0), ('page', 1, 1))
		     AS c(channel, kind, agent)
		ON CONFLICT DO NOTHING`, ids); err != nil {
		return fmt.Errorf("seed dense roll-ups: %w", err)
	}
	if _, err := b.data.Exec(ctx, `VACUUM ANALYZE jobs.stats_daily`); err != nil {
		return err
	}
	sr.seeded = time.Since(start)
	if err := b.data.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE job_id = ANY($1)) FROM jobs.stats_daily`, ids).
		Scan(&sr.dailyRows, &sr.denseRows); err != nil {
		return err
	}
	b.note("row ys: %d roll-up rows (%d of the measured jobs) in %s", sr.dailyRows, sr.denseRows, sr.seeded.Round(time.Second))
	// The plan of the store's read by week (statsdb.WeekRows) for the first job.
	to := time.Now().UTC().Format(time.DateOnly)
	from := time.Now().UTC().AddDate(0, 0, -364).Format(time.DateOnly)
	rows, err := b.data.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT job_id, date_trunc('week', day)::date AS week, channel, kind, agent,
		sum(events)::bigint, sum(uniques)::bigint FROM jobs.stats_daily
		WHERE job_id = $1 AND day BETWEEN $2::date AND $3::date GROUP BY job_id, week, channel, kind, agent`, jobs[0].id, from, to)
	if err != nil {
		return err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	sr.plan = strings.Join(lines, "\n")
	l := load{Method: "GET", Headers: b.keyHeaders()}
	var paths []string
	for _, j := range jobs {
		p := fmt.Sprintf("/v2/jobs/%d/stats?from=%s&to=%s&interval=week", j.id, from, to)
		l.Requests = append(l.Requests, request{Path: p})
		paths = append(paths, p)
	}
	m, _, err := b.measureGateway(ctx, row{ID: "ys", Name: "GET /v2/jobs/{id}/stats?from&to (a year)&interval=week", Backend: "jobs", Load: l}, true)
	if err != nil {
		return err
	}
	b.addLoadRSS(m.rss)
	sr.ys = &m
	rr := runRate(ctx, b.s.URL["gateway"], paths, b.keyHeaders(), statsReadRate, b.cfg.Duration, 64)
	sr.ysRate = &rr
	return nil
}

// batchRows sends batchRuns batches of 1 000 new jobs through the gateway,
// one after the other, each timed from its POST to the GET that says done
// (polled every 20 ms), and checks that every row was created.
func (b *bench) batchRows(ctx context.Context, d dataset, sr *statsReport) error {
	gw := b.s.URL["gateway"]
	var profiled sync.WaitGroup
	if b.cfg.ProfileRow == "batch" {
		profiled.Add(1)
		go func() {
			defer profiled.Done()
			if err := b.profile(ctx, "jobs", 5*time.Second); err != nil {
				b.note("profile jobs: %v", err)
			}
		}()
	}
	cpu := trackCPU(b.cpuGroups(ctx, "jobs"), 100*time.Millisecond)
	for run := range batchRuns {
		b.note("row batch: %d rows, run %d of %d", batchRows, run+1, batchRuns)
		token := b.nonce()
		var sb strings.Builder
		sb.WriteString(`{"mode":"upsert","jobs":[`)
		for i := range batchRows {
			if i > 0 {
				sb.WriteByte(',')
			}
			body := jobBody(d.CityID, fmt.Sprintf("batch-%s-%d", token, i))
			sb.WriteString(strings.TrimSuffix(body, "}"))
			fmt.Fprintf(&sb, `,"external_ref":"bench-%s-%d"}`, token, i)
		}
		sb.WriteString(`]}`)
		l := load{Method: "POST", Headers: map[string]string{"X-API-Key": b.key, "Content-Type": "application/json"},
			Requests: []request{{Path: "/v2/jobs/batch", Body: sb.String()}}}
		began := time.Now()
		resp, raw, err := b.send(ctx, gw, l, 0)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("batch: %d %.500s", resp.StatusCode, raw)
		}
		var op struct {
			Data struct {
				URL    string         `json:"url"`
				Status string         `json:"status"`
				Counts map[string]int `json:"counts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			return err
		}
		br := batchRun{}
		get := load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: op.Data.URL}}}
		for deadline := time.Now().Add(2 * time.Minute); op.Data.Status != "done"; {
			if time.Now().After(deadline) {
				return fmt.Errorf("batch %s not done in 2 minutes", op.Data.URL)
			}
			time.Sleep(20 * time.Millisecond)
			raw, err := b.probe(ctx, gw, get, 0)
			if err != nil {
				return err
			}
			br.polls++
			if err := json.Unmarshal(raw, &op); err != nil {
				return err
			}
		}
		br.took = time.Since(began)
		br.created, br.errors = op.Data.Counts["created"], op.Data.Counts["error"]
		if br.created != batchRows {
			return fmt.Errorf("batch: %v, want %d created", op.Data.Counts, batchRows)
		}
		sr.batches = append(sr.batches, br)
	}
	sr.batchCPU = cpu.Stop()
	profiled.Wait()
	return nil
}

// markdown writes the phase's tables and targets.
func (sr *statsReport) markdown(r *report, w func(string, ...any)) {
	if len(sr.goRuns) > 0 {
		w("Apply redirect at a constant rate (the bench's open-loop generator, latency from each request's scheduled start), %d jobs of the bench key, a browser's user agent, %d req/s for %s a run, the two interleaved:\n\n",
			statsJobs, r.cfg.Rate, r.cfg.Duration)
		w("| round | plain: GET /jobs/{id} → 301 p50 / p99 / max ms (errors) | go: GET /go/{job_ref} → 302 p50 / p99 / max ms (errors) | p99 added |\n|--:|---|---|--:|\n")
		for i := range sr.goRuns {
			p, g := sr.plainRuns[i], sr.goRuns[i]
			w("| %d | %s / %s / %s (%d) | %s / %s / %s (%d) | %s ms |\n", i+1, msd(p.P50), msd(p.P99), msd(p.Max), p.Errors+p.Dropped,
				msd(g.P50), msd(g.P99), msd(g.Max), g.Errors+g.Dropped, msd(g.P99-p.P99))
		}
		w("\n")
	}
	if len(sr.pvOn) > 0 {
		w("The job page with and without counting (wrk -c%d, %d pages of the bench key's jobs, a browser's user agent; jobs restarted between on and off; rounds on, off, off, on):\n\n", r.cfg.Conns, sr.pages)
		w("| run | req/s | p50 ms | p99 ms | CPU µs/req: total (gw + svc + pg + redis) |\n|---|--:|--:|--:|---|\n")
		for i := range sr.pvOn {
			for _, x := range []struct {
				name string
				m    measurement
			}{{"on", sr.pvOn[i]}, {"off", sr.pvOff[i]}} {
				m := x.m
				w("| counting %s, %d | %.0f | %s | %s | %s (%s + %s + %s + %s) |\n", x.name, i+1, m.wrk.RPS(), ms(m.wrk.P50), ms(m.wrk.P99),
					usd(m.cpuPerRequest("gateway", "backend", "postgres", "redis")), usd(m.cpuPerRequest("gateway")), usd(m.cpuPerRequest("backend")),
					usd(m.cpuPerRequest("postgres")), usd(m.cpuPerRequest("redis")))
			}
		}
		w("\n")
		w("The last round's browser views (its warm-up included): the jobs service's jobs_stats_events_total %d, the stats API %d.\n\n", sr.promViews, sr.apiViews)
	}
	if sr.ys != nil {
		w("One job's year of stats: %d daily roll-up rows seeded (every job one page-view row a week for a year; the %d measured jobs a dense year, %d rows) in %s. The read's plan (statsdb.WeekRows, the first job):\n\n```\n%s\n```\n\n",
			sr.dailyRows, statsJobs, sr.denseRows, sr.seeded.Round(time.Second), sr.plan)
		m := sr.ys
		w("GET /v2/jobs/{id}/stats (a year, by week) through the gateway: saturated (wrk -c%d) %.0f req/s, p50 %s ms, p99 %s ms, %d errors; at %d req/s (no queueing) p50 %s ms, p99 %s ms, max %s ms, %d errors.\n\n",
			r.cfg.Conns, m.wrk.RPS(), ms(m.wrk.P50), ms(m.wrk.P99), m.wrk.Errors(), statsReadRate, msd(sr.ysRate.P50), msd(sr.ysRate.P99), msd(sr.ysRate.Max), sr.ysRate.Errors+sr.ysRate.Dropped)
	}
	if len(sr.batches) > 0 {
		w("POST /v2/jobs/batch of %d new jobs through the gateway (202, an operation), from the POST to the GET that says done (polled every 20 ms), one after the other:\n\n| run | took | rows/s | created | polls |\n|--:|--:|--:|--:|--:|\n", batchRows)
		for i, br := range sr.batches {
			w("| %d | %s | %.0f | %d | %d |\n", i+1, br.took.Round(time.Millisecond), float64(batchRows)/br.took.Seconds(), br.created, br.polls)
		}
		var took time.Duration
		for _, br := range sr.batches {
			took += br.took
		}
		per := func(g string) string { return usd(sr.batchCPU[g] / time.Duration(batchRows*len(sr.batches))) }
		w("\nCPU per row over the runs (%s wall): gateway %s µs, jobs %s µs, PostgreSQL %s µs, Redis %s µs, autovacuum %s µs; the three busy %.0f %% of the wall time (of %d cores).\n\n",
			took.Round(time.Millisecond), per("gateway"), per("backend"), per("postgres"), per("redis"), per("autovacuum"),
			100*float64(sr.batchCPU["gateway"]+sr.batchCPU["backend"]+sr.batchCPU["postgres"])/float64(took), runtime.NumCPU())
	}
}

// targets are the phase's targets (none is in heldInRecord yet).
func (sr *statsReport) targets(r *report, w func(string, ...any)) {
	if len(sr.goRuns) > 0 {
		worst := sr.goRuns[0].P99 - sr.plainRuns[0].P99
		errs := int64(0)
		for i := range sr.goRuns {
			worst = max(worst, sr.goRuns[i].P99-sr.plainRuns[i].P99)
			errs += sr.goRuns[i].Errors + sr.goRuns[i].Dropped
		}
		ok := worst <= targetGoAddedP99 && errs == 0
		r.check(w, "go", ok, "| (go) /go/ adds ≤ %s ms p99 over a plain redirect at %d req/s (worst round) | %s ms (%d errors) | %s |\n",
			msd(targetGoAddedP99), r.cfg.Rate, msd(worst), errs, verdict(ok))
	}
	if len(sr.pvOn) > 0 {
		var on, off float64
		for i := range sr.pvOn {
			on += sr.pvOn[i].wrk.RPS()
			off += sr.pvOff[i].wrk.RPS()
		}
		cost := 1 - on/off
		ok := cost <= targetPageCost
		r.check(w, "pv", ok, "| (pv) counting costs the page ≤ %.0f %% of its throughput (rounds' mean) | %.1f %% | %s |\n", targetPageCost*100, cost*100, verdict(ok))
		diff := 1.0
		if sr.apiViews > 0 {
			diff = math.Abs(float64(sr.promViews-sr.apiViews)) / float64(sr.apiViews)
		}
		agree := diff <= targetCounterDiff
		r.check(w, "pv-counters", agree, "| (pv) the Prometheus counter of views agrees with the API's total within %.1f %% (the last round) | %d / %d | %s |\n",
			targetCounterDiff*100, sr.promViews, sr.apiViews, verdict(agree))
	}
	if sr.ysRate != nil {
		ok := sr.ysRate.P99 <= targetYearStats && sr.ysRate.Errors == 0
		r.check(w, "ys", ok, "| (ys) a job's year of stats ≤ %s ms (p99 at %d req/s) | %s ms | %s |\n", msd(targetYearStats), statsReadRate, msd(sr.ysRate.P99), verdict(ok))
	}
	if len(sr.batches) > 0 {
		var took time.Duration
		for _, br := range sr.batches {
			took += br.took
		}
		rate := float64(batchRows*len(sr.batches)) / took.Seconds()
		ok := rate >= targetBatchRows
		r.check(w, "batch", ok, "| (batch) a %d-row batch ≥ %.0f rows/s through the gateway (all runs) | %.0f rows/s | %s |\n", batchRows, targetBatchRows, rate, verdict(ok))
	}
}
