package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var checker = contract.MustNew()

const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// noFollow sees the redirects themselves.
var noFollow = &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

type reply struct {
	status int
	header http.Header
	body   []byte
	env    struct {
		Success bool            `json:"success"`
		Status  int             `json:"status"`
		Data    json.RawMessage `json:"data"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// do sends a request through the gateway; hdr are header name/value pairs.
func do(t testing.TB, method, path, body string, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, method, sys.URL["gateway"]+path, suite.Body(body), hdr...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	r := reply{status: res.StatusCode, header: res.Header}
	r.body, _ = io.ReadAll(res.Body)
	if strings.HasPrefix(path, "/v2/") {
		// Every API answer is what the OpenAPI document promises.
		if err := checker.Check(req, res.StatusCode, res.Header, r.body); err != nil {
			t.Errorf("contract: %s %s: %v", method, path, err)
		}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(r.body, &r.env); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, r.body)
		}
	}
	return r
}

type counts struct {
	Views        int64 `json:"views"`
	UniqueViews  int64 `json:"unique_views"`
	ApplyClicks  int64 `json:"apply_clicks"`
	UniqueClicks int64 `json:"unique_clicks"`
	Impressions  int64 `json:"impressions"`
	BotViews     int64 `json:"bot_views"`
	BotClicks    int64 `json:"bot_clicks"`
}

type jobStats struct {
	IDJob     int64  `json:"id_job"`
	TimeZone  string `json:"time_zone"`
	Totals    counts `json:"totals"`
	Intervals []struct {
		Start     string            `json:"start"`
		ByChannel map[string]counts `json:"by_channel"`
		counts
	} `json:"intervals"`
}

// createJob posts a job with key and returns its id and public URL.
func createJob(t testing.TB, key, applyURL string) (int64, string) {
	t.Helper()
	body := fmt.Sprintf(`{"title":"Stats host %s","company":"Statsco","description":"<p>Counted</p>","job_type":"parttime",
		"tags":"community","city_name":"Berlin","apply_url":%q}`, suite.RandomHex(4), applyURL)
	r := do(t, "POST", "/v2/jobs", body, "X-API-Key", key, "Content-Type", "application/json")
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var res struct {
		JobID   int64   `json:"job_id"`
		Status  string  `json:"status"`
		ViewURL *string `json:"view_url"`
	}
	if err := json.Unmarshal(r.env.Data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "active" {
		// A non-Pro space's job starts as a draft: publish it (free plan).
		p := do(t, "POST", "/v2/jobs/publish", fmt.Sprintf(`{"job_id":%d}`, res.JobID), "X-API-Key", key, "Content-Type", "application/json")
		if p.status != 200 {
			t.Fatalf("publish: %d %s", p.status, p.body)
		}
	}
	g := do(t, "GET", fmt.Sprintf("/v2/jobs/%d", res.JobID), "", "X-API-Key", key)
	var d struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(g.env.Data, &d); err != nil || d.URL == "" {
		t.Fatalf("get job: %d %s", g.status, g.body)
	}
	return res.JobID, d.URL
}

var applyHref = regexp.MustCompile(`id="apply" href="([^"]+)"`)

// goPath opens the job's page as a browser and returns its Apply link's
// path (/go/{job_ref}?src=...).
func goPath(t testing.TB, pageURL, query string) string {
	t.Helper()
	i := strings.Index(pageURL, "/jobs/")
	r := do(t, "GET", pageURL[i:]+query, "", "User-Agent", browser, "X-Forwarded-For", "198.51.100.200")
	if r.status != 200 {
		t.Fatalf("job page: %d %s", r.status, r.body)
	}
	m := applyHref.FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("no Apply link on the page: %s", r.body)
	}
	href := strings.ReplaceAll(string(m[1]), "&amp;", "&")
	j := strings.Index(href, "/go/")
	if j < 0 {
		t.Fatalf("the Apply link does not go through /go/: %s", href)
	}
	return href[j:]
}

// statsOf polls the job's stats until done says they are complete (the lag
// is at most 60 s; here a few seconds).
func statsOf(t testing.TB, key string, id int64, done func(jobStats) bool) jobStats {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := do(t, "GET", fmt.Sprintf("/v2/jobs/%d/stats", id), "", "X-API-Key", key)
		if r.status != 200 {
			t.Fatalf("stats: %d %s", r.status, r.body)
		}
		var s jobStats
		if err := json.Unmarshal(r.env.Data, &s); err != nil {
			t.Fatal(err)
		}
		if done(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// metric reads a counter of the jobs service's admin port.
func metric(t testing.TB, series string) float64 {
	t.Helper()
	res, err := http.Get(sys.Admin["jobs"] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

const clicksSeries = `jobs_stats_events_total{agent="browser",kind="click"}`

// N apply clicks from M clients read back as N clicks and M unique clicks;
// crawlers and requests without a user agent are counted apart; the
// redirect leads to the job's own apply_url; the Prometheus counter moved
// by as much as the API's total.
func TestClicksFromClientsReadBack(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	apply := "https://apply.example/jobs/" + suite.RandomHex(4) + "?a=1"
	id, page := createJob(t, pro, apply)
	path := goPath(t, page, "?utm_source=Newsletter")
	if !strings.Contains(path, "src=newsletter") {
		t.Errorf("the Apply link of a page reached by utm_source=Newsletter: %s", path)
	}
	before := metric(t, clicksSeries)
	const n, m = 23, 5
	for i := range n {
		r := do(t, "GET", path, "", "User-Agent", browser, "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", 10+i%m))
		if r.status != 302 || r.header.Get("Location") != apply {
			t.Fatalf("click %d: %d Location %q", i, r.status, r.header.Get("Location"))
		}
	}
	for _, ua := range []string{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "curl/8.5.0", ""} {
		hdr := []string{"X-Forwarded-For", "203.0.113.99"}
		if ua != "" {
			hdr = append(hdr, "User-Agent", ua)
		}
		req, _ := suite.NewRequest(context.Background(), "GET", sys.URL["gateway"]+path, nil, hdr...)
		if ua == "" {
			req.Header["User-Agent"] = []string{""} // Go sends its own otherwise
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 302 {
			t.Fatalf("bot click (%q): %d", ua, res.StatusCode)
		}
	}
	s := statsOf(t, pro, id, func(s jobStats) bool { return s.Totals.ApplyClicks >= n && s.Totals.BotClicks >= 3 })
	want := counts{Views: 1, UniqueViews: 1, ApplyClicks: n, UniqueClicks: m, BotClicks: 3}
	if s.Totals != want || s.TimeZone != "UTC" {
		t.Fatalf("totals %+v (%s), want %+v", s.Totals, s.TimeZone, want)
	}
	last := s.Intervals[len(s.Intervals)-1]
	if last.Start != time.Now().UTC().Format(time.DateOnly) || last.ByChannel["newsletter"].ApplyClicks != n ||
		last.ByChannel["newsletter"].UniqueClicks != m || last.ByChannel["newsletter"].Views != 1 {
		t.Errorf("today's interval %s by channel: %+v", last.Start, last.ByChannel)
	}
	if got := metric(t, clicksSeries) - before; got != n {
		t.Errorf("%s moved by %v, the API counts %d", clicksSeries, got, n)
	}
}

// Only the job's own URLs are targets: a foreign URL in src is a label, a
// tampered or made-up ref is a 404.
func TestNoOpenRedirect(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	apply := "https://apply.example/own"
	_, page := createJob(t, pro, apply)
	path := goPath(t, page, "")
	ref := strings.TrimPrefix(path[:strings.IndexByte(path, '?')], "/go/")
	for _, src := range []string{"https://evil.example/", "//evil.example", "javascript:alert(1)"} {
		r := do(t, "GET", "/go/"+ref+"?src="+src, "", "User-Agent", browser)
		if r.status != 302 || r.header.Get("Location") != apply {
			t.Errorf("src=%s: %d Location %q", src, r.status, r.header.Get("Location"))
		}
	}
	num, mac, _ := strings.Cut(ref, "-")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == '0' {
			b[0] = '1'
		} else {
			b[0] = '0'
		}
		return string(b)
	}
	for _, bad := range []string{num, num + "-", num + "-" + flip(mac), flip(num) + "-" + mac, "0" + num + "-" + mac,
		"1-" + mac, "https:%2F%2Fevil.example", "999999999-" + mac} {
		r := do(t, "GET", "/go/"+bad+"?src=page", "", "User-Agent", browser)
		if r.status != 404 || r.header.Get("Location") != "" {
			t.Errorf("/go/%s: %d Location %q, want 404 and none", bad, r.status, r.header.Get("Location"))
		}
	}
}

// With the statistics' store away the redirect still answers 302 at once;
// the clicks wait in the buffer and are counted when it is back.
func TestRedirectWithTheStoreDown(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	apply := "https://apply.example/down"
	id, page := createJob(t, pro, apply)
	path := goPath(t, page, "")
	statsOf(t, pro, id, func(s jobStats) bool { return s.Totals.Views == 1 })
	relay.Down()
	const k = 7
	for i := range k {
		start := time.Now()
		r := do(t, "GET", path, "", "User-Agent", browser, "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i))
		if r.status != 302 || r.header.Get("Location") != apply {
			relay.Up()
			t.Fatalf("click %d with the store down: %d %q", i, r.status, r.header.Get("Location"))
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("click %d with the store down took %v", i, d)
		}
	}
	failed := `jobs_stats_flushes_total{result="error"}`
	before := metric(t, failed)
	time.Sleep(2500 * time.Millisecond) // writes fail meanwhile, the clicks wait in the buffer
	if metric(t, failed) <= before {
		t.Errorf("%s did not move while the store was down: the test did not take it away", failed)
	}
	relay.Up()
	s := statsOf(t, pro, id, func(s jobStats) bool { return s.Totals.ApplyClicks >= k })
	if s.Totals.ApplyClicks != k || s.Totals.UniqueClicks != k {
		t.Fatalf("after the store came back: %+v, want %d clicks from %d clients", s.Totals, k, k)
	}
}

// createKey makes a key with gateway-keys.
func createKey(t testing.TB, args ...string) string {
	t.Helper()
	out, err := sys.Run(context.Background(), "gateway-keys", append([]string{"create", "-name", "stats-" + suite.RandomHex(3), "-json"}, args...)...)
	if err != nil {
		t.Fatalf("gateway-keys create %v: %v %s", args, err, out)
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		t.Fatalf("gateway-keys create: %v %s", err, out)
	}
	return k.Key
}

// Statistics are a poster's: whatever key asks, it reads the numbers of its
// own jobs only (its Pro space's, or those it posted without a space), and
// of any other job — another space's, another platform's, one that does not
// exist — it gets 403 or 404 with no numbers; a non-Pro space key gets 403
// naming the Pro plan, even for its own job. A property walk over keys and
// jobs in random order.
func TestStatsIsolationBetweenSpaces(t *testing.T) {
	ctx := context.Background()
	var space int64
	if err := db.QueryRow(ctx, `INSERT INTO directory.spaces (name, slug, latitude, longitude, city_id, confirmed, is_pro)
		SELECT 'Stats Pro Two', 'stats-pro-two-'||substr(md5(random()::text), 1, 6), latitude, longitude, city_id, true, true
		FROM directory.spaces WHERE id = 1 RETURNING id`).Scan(&space); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{
		"pro1":      sys.Keys["space 1 (Pro) key"],
		"pro2":      createKey(t, "-space", fmt.Sprint(space), "-scopes", "read,jobs:write"),
		"nonpro":    sys.Keys["space 2 (non-Pro) key"],
		"platformA": createKey(t, "-scopes", "write"),
		"platformB": createKey(t, "-scopes", "write"),
	}
	jobs := map[string]int64{}
	for _, owner := range []string{"pro1", "pro2", "nonpro", "platformA"} {
		id, page := createJob(t, keys[owner], "https://apply.example/"+owner)
		jobs[owner] = id
		p := goPath(t, page, "")
		do(t, "GET", p, "", "User-Agent", browser)
	}
	jobs["none"] = 987654321
	// Every job has a view and a click written.
	statsOf(t, keys["pro1"], jobs["pro1"], func(s jobStats) bool { return s.Totals.ApplyClicks == 1 })
	time.Sleep(1500 * time.Millisecond)

	type pair struct{ key, job string }
	var pairs []pair
	for k := range keys {
		for j := range jobs {
			pairs = append(pairs, pair{k, j})
		}
	}
	rand.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	for _, p := range pairs {
		r := do(t, "GET", fmt.Sprintf("/v2/jobs/%d/stats?interval=week", jobs[p.job]), "", "X-API-Key", keys[p.key])
		own := p.key == p.job
		switch {
		case own && p.key == "nonpro":
			if r.status != 403 || r.env.Error == nil || !strings.Contains(r.env.Error.Message, "Pro plan") {
				t.Errorf("non-Pro space, own job: %d %s", r.status, r.body)
			}
		case own:
			var s jobStats
			_ = json.Unmarshal(r.env.Data, &s)
			if r.status != 200 || s.Totals.ApplyClicks != 1 || s.Totals.Views != 1 {
				t.Errorf("%s reading its own job: %d %s", p.key, r.status, r.body)
			}
		default:
			if (r.status != 403 && r.status != 404) || strings.Contains(string(r.body), "apply_clicks") {
				t.Errorf("%s reading %s's job: %d %s", p.key, p.job, r.status, r.body)
			}
		}
	}
	// The summaries hold their owner's jobs only.
	for k, key := range keys {
		r := do(t, "GET", "/v2/stats", "", "X-API-Key", key)
		if k == "nonpro" {
			if r.status != 403 || !strings.Contains(r.env.Error.Message, "Pro plan") {
				t.Errorf("non-Pro summary: %d %s", r.status, r.body)
			}
			continue
		}
		var s struct {
			Totals  counts `json:"totals"`
			TopJobs []struct {
				IDJob int64 `json:"id_job"`
			} `json:"top_jobs"`
		}
		if err := json.Unmarshal(r.env.Data, &s); r.status != 200 || err != nil {
			t.Fatalf("%s summary: %d %s", k, r.status, r.body)
		}
		for _, j := range s.TopJobs {
			var space, key int64
			if err := db.QueryRow(ctx, `SELECT space_id, key_id FROM jobs.jobs WHERE id = $1`, j.IDJob).Scan(&space, &key); err != nil {
				t.Fatal(err)
			}
			if j.IDJob != jobs[k] && k != "pro1" {
				t.Errorf("%s's summary lists job %d (space %d), not its own", k, j.IDJob, space)
			}
			if k == "pro1" && space != 1 {
				t.Errorf("space 1's summary lists job %d of space %d", j.IDJob, space)
			}
		}
		if k == "platformB" && (len(s.TopJobs) != 0 || s.Totals != (counts{})) {
			t.Errorf("a platform key that posted nothing reads numbers: %s", r.body)
		}
	}
}

// The ranges are checked: 422 naming the problem.
func TestStatsRange422(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	id, _ := createJob(t, pro, "https://apply.example/range")
	for _, path := range []string{"/v2/stats?from=2026-13-01", "/v2/stats?interval=day", "/v2/stats?from=2026-03-02&to=2026-03-01",
		"/v2/stats?from=2020-01-01&to=2026-01-01", fmt.Sprintf("/v2/jobs/%d/stats?interval=month", id),
		fmt.Sprintf("/v2/jobs/%d/stats?to=yesterday", id)} {
		r := do(t, "GET", path, "", "X-API-Key", pro)
		if r.status != 422 || r.env.Error == nil || r.env.Error.Code != "validation_error" {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}

// A browser's prefetch of the apply link is redirected like a click but not
// counted (a HEAD neither: statsapp TestRedirectRemembersWhereJobsLed).
func TestPrefetchIsNotAClick(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	id, page := createJob(t, pro, "https://apply.example/head")
	path := goPath(t, page, "")
	if r := do(t, "GET", path, "", "User-Agent", browser, "Sec-Purpose", "prefetch"); r.status != 302 {
		t.Fatalf("prefetch: %d", r.status)
	}
	if r := do(t, "GET", path, "", "User-Agent", browser); r.status != 302 {
		t.Fatalf("click: %d", r.status)
	}
	statsOf(t, pro, id, func(s jobStats) bool { return s.Totals.ApplyClicks >= 1 })
	time.Sleep(1500 * time.Millisecond) // a counted prefetch would be written by now too
	s := statsOf(t, pro, id, func(jobStats) bool { return true })
	if s.Totals.ApplyClicks != 1 {
		t.Errorf("clicks %d, want 1 (the GET alone)", s.Totals.ApplyClicks)
	}
}

// The jobs service's Prometheus counters of views and clicks
// (jobs_stats_events_total by kind and agent) agree exactly with the
// stats API's totals after a run: n views and clicks from m clients on
// two jobs, crawlers' and agentless requests apart. No other test of the
// package runs meanwhile (none is parallel), so the counters' moves are
// this test's requests.
func TestPrometheusCountersAgreeWithTheAPI(t *testing.T) {
	pro := sys.Keys["space 1 (Pro) key"]
	series := func(kind, agent string) string {
		return fmt.Sprintf(`jobs_stats_events_total{agent=%q,kind=%q}`, agent, kind)
	}
	type key struct{ kind, agent string }
	keys := []key{{"view", "browser"}, {"view", "crawler"}, {"view", "none"}, {"click", "browser"}, {"click", "crawler"}, {"click", "none"}}
	before := map[key]float64{}
	for _, k := range keys {
		before[k] = metric(t, series(k.kind, k.agent))
	}
	const n, m = 31, 7
	agents := []string{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", ""}
	var ids []int64
	for j := range 2 {
		id, page := createJob(t, pro, fmt.Sprintf("https://apply.example/prom/%d", j))
		ids = append(ids, id)
		path := goPath(t, page, "") // one browser view
		pagePath := page[strings.Index(page, "/jobs/"):]
		for i := range n {
			xff := fmt.Sprintf("203.0.113.%d", 20+i%m)
			if r := do(t, "GET", pagePath, "", "User-Agent", browser, "X-Forwarded-For", xff); r.status != 200 {
				t.Fatalf("view %d: %d", i, r.status)
			}
			if r := do(t, "GET", path, "", "User-Agent", browser, "X-Forwarded-For", xff); r.status != 302 {
				t.Fatalf("click %d: %d", i, r.status)
			}
		}
		for _, ua := range agents {
			for _, p := range []string{pagePath, path} {
				req, _ := suite.NewRequest(context.Background(), "GET", sys.URL["gateway"]+p, nil, "X-Forwarded-For", "203.0.113.99")
				req.Header["User-Agent"] = []string{ua} // "" sends none
				res, err := noFollow.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode >= 400 {
					t.Fatalf("%q %s: %d", ua, p, res.StatusCode)
				}
			}
		}
	}
	var api counts
	for _, id := range ids {
		s := statsOf(t, pro, id, func(s jobStats) bool {
			return s.Totals.ApplyClicks >= n && s.Totals.BotClicks >= 2 && s.Totals.BotViews >= 2
		})
		if want := (counts{Views: n + 1, UniqueViews: m + 1, ApplyClicks: n, UniqueClicks: m, BotViews: 2, BotClicks: 2}); s.Totals != want {
			t.Fatalf("job %d: totals %+v, want %+v", id, s.Totals, want)
		}
		api.Views += s.Totals.Views
		api.ApplyClicks += s.Totals.ApplyClicks
		api.BotViews += s.Totals.BotViews
		api.BotClicks += s.Totals.BotClicks
	}
	moved := map[key]int64{}
	for _, k := range keys {
		moved[k] = int64(metric(t, series(k.kind, k.agent)) - before[k])
	}
	prom := counts{Views: moved[key{"view", "browser"}], ApplyClicks: moved[key{"click", "browser"}],
		BotViews: moved[key{"view", "crawler"}] + moved[key{"view", "none"}], BotClicks: moved[key{"click", "crawler"}] + moved[key{"click", "none"}]}
	if prom != api {
		t.Fatalf("the counters moved by %+v (%v), the API counts %+v", prom, moved, api)
	}
	if moved[key{"view", "none"}] != 2 || moved[key{"click", "crawler"}] != 2 {
		t.Fatalf("by agent: %v", moved)
	}
}
