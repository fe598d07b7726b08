package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// tally counts the answers of the traffic by status code and keeps, for the
// requests through the gateway, what the clients saw of each service behind
// it: how long each answer took and how many requests were in flight at
// once. It is the independent view a load alert must agree with.
type tally struct {
	mu       sync.Mutex
	status   map[int]int
	errs     int
	gateway  string // base URL: only requests to it are timed
	answers  []answer
	inFlight map[string]int
	maxIn    map[string]int
}

// answer is one timed answer, attributed to the services that served it.
type answer struct {
	done     time.Time
	took     time.Duration
	services []string
}

func newTally(gateway string) *tally {
	return &tally{status: map[int]int{}, gateway: gateway, inFlight: map[string]int{}, maxIn: map[string]int{}}
}

// servedBy names the processes that handle a gateway request: the gateway,
// and the backend its path routes to unless the gateway answers it alone
// (refused keys, rate limits, oversized bodies and headers, methods Fiber
// does not know: none of these reach a backend, and the last not even the
// gateway's histogram).
func servedBy(method, path string, code int) []string {
	if !slices.Contains(standardMethods, method) {
		return nil
	}
	out := []string{"gateway"}
	switch code {
	case 401, 403, 413, 429, 431:
		return out
	}
	switch {
	case strings.HasPrefix(path, "/v2/jobs"), path == "/v2/vine/jobs":
		out = append(out, "jobs")
	case path == "/v2/cities", path == "/v2/spaces", path == "/v2/city_spaces":
		out = append(out, "directory")
	case strings.HasPrefix(path, "/v2/blog"), path == "/v2/vine/blog":
		out = append(out, "content")
	case path == "/v2/events", path == "/v2/vine/events", path == "/v2/feedback", strings.HasPrefix(path, "/v2/newsletters/"):
		out = append(out, "community")
	}
	return out
}

var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// begin counts a gateway request in flight towards the backend its path
// routes to (before the answer says whether it got there: an upper bound).
func (t *tally) begin(method, path string) (end func()) {
	svcs := servedBy(method, path, 200)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range svcs {
		t.inFlight[s]++
		t.maxIn[s] = max(t.maxIn[s], t.inFlight[s])
	}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, s := range svcs {
			t.inFlight[s]--
		}
	}
}

func (t *tally) add(method string, u *url.URL, code int, err error, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.errs++
		return
	}
	t.status[code]++
	if t.gateway != "" && strings.HasPrefix(u.String(), t.gateway) {
		t.answers = append(t.answers, answer{done: time.Now(), took: took, services: servedBy(method, u.Path, code)})
	}
}

// worstP99 is the highest p99 of service's answers, as the clients timed
// them, over every prefix of the traffic (in one-second steps): an alert
// rule whose window is longer than the traffic sees exactly such prefixes.
func (t *tally) worstP99(service string) time.Duration {
	t.mu.Lock()
	var took []time.Duration
	var done []time.Time
	for _, a := range t.answers {
		if slices.Contains(a.services, service) {
			took, done = append(took, a.took), append(done, a.done)
		}
	}
	t.mu.Unlock()
	if len(took) == 0 {
		return 0
	}
	var worst time.Duration
	next := done[0].Add(time.Second)
	for i := range took {
		if i == len(took)-1 || done[i+1].After(next) {
			prefix := slices.Clone(took[:i+1])
			slices.Sort(prefix)
			worst = max(worst, prefix[len(prefix)*99/100])
			next = done[i].Add(time.Second)
		}
	}
	return worst
}

// slowest is the longest the clients waited for an answer of service.
func (t *tally) slowest(service string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var worst time.Duration
	for _, a := range t.answers {
		if slices.Contains(a.services, service) {
			worst = max(worst, a.took)
		}
	}
	return worst
}

// maxInFlight is the most requests the clients had in flight at once
// towards service.
func (t *tally) maxInFlight(service string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.maxIn[service]
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	codes := make([]int, 0, len(t.status))
	for c := range t.status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var b strings.Builder
	for _, c := range codes {
		fmt.Fprintf(&b, "%d×%d ", c, t.status[c])
	}
	fmt.Fprintf(&b, "transport errors×%d", t.errs)
	if len(t.answers) > 0 {
		d := make([]time.Duration, len(t.answers))
		for i, a := range t.answers {
			d[i] = a.took
		}
		slices.Sort(d)
		fmt.Fprintf(&b, "; the gateway's answers as the clients timed them: p50 %s p99 %s max %s",
			d[len(d)/2].Round(time.Millisecond), d[len(d)*99/100].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
	return b.String()
}

var client = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true},
}

// do sends one request and returns its status and body (status 0 on a
// transport error, which the tally counts apart).
func do(ctx context.Context, tl *tally, method, url string, body []byte, hdr ...string) (int, []byte) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		tl.add(method, nil, 0, err, 0)
		return 0, nil
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if strings.HasPrefix(url, tl.gateway) && tl.gateway != "" {
		defer tl.begin(method, req.URL.Path)()
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			tl.add(method, req.URL, 0, err, 0)
		}
		return 0, nil
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tl.add(method, req.URL, resp.StatusCode, nil, time.Since(start))
	return resp.StatusCode, raw
}

// route is one entry of the gateway's route table (GET /v2).
type route struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Auth   string `json:"auth"`
}

func routeTable(t *testing.T, gw string) []route {
	t.Helper()
	var env suite.Envelope
	_, raw := do(context.Background(), newTally(""), "GET", gw+"/v2", nil)
	var info struct {
		Routes []route `json:"routes"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || json.Unmarshal(env.Data, &info) != nil || len(info.Routes) < 10 {
		t.Fatalf("GET /v2: no route table: %.300s", raw)
	}
	return info.Routes
}

// jobBody is a valid job whose description is about size bytes long.
func jobBody(title string, size int) []byte {
	b, _ := json.Marshal(map[string]any{
		"title": title, "company": "Prometheus Ltd", "job_type": "fulltime", "tags": "ops,metrics", "city_name": "Berlin",
		"description": "<p>" + strings.Repeat("scrape me ", max(size/10, 1)) + "</p>",
	})
	return b
}

// oddMethods are methods a client may send: Fiber answers them (405, 404 or
// 501) and the metrics must still hold only bounded, stable label values.
var oddMethods = []string{"PROPFIND", "get", "post", "Delete", "GETT", "POS", "M-SEARCH", "PURGE", "TRACE", "CONNECT",
	strings.Repeat("VERYLONGMETHOD", 20), "PATCH", "PUT", "DELETE", "OPTIONS", "HEAD"}

// traffic sends mixed, concurrent traffic for d with workers goroutines: the
// gateway's every route with good, restricted, space-scoped, bad and missing
// keys in the three ways a key may come, job writes with idempotent replays and
// conflicting replays, unpublishes, public posts beyond their rate limit,
// bodies from empty to beyond the body limit, odd and very long methods, and
// direct calls to every backend (refused without an identity).
func traffic(t *testing.T, sys *suite.Suite, d time.Duration, workers int) *tally {
	t.Helper()
	gw := sys.URL["gateway"]
	routes := routeTable(t, gw)
	live, restricted := sys.Keys["live platform key"], sys.Keys["restricted read-only key"]
	space1, space2 := sys.Keys["space 1 (Pro) key"], sys.Keys["space 2 (non-Pro) key"]
	importer := sys.Keys["trusted importer"]
	if live == "" || restricted == "" || space1 == "" || space2 == "" || importer == "" {
		t.Fatalf("demo keys missing: %v", sys.Keys)
	}
	readKeys := []string{live, restricted, space1, space2, importer}
	badKeys := []string{"svc_live_" + strings.Repeat("0", 40), "svc_rstr_nope", "not-a-key", "", strings.Repeat("k", 5000)}
	backends := []string{sys.URL["jobs"], sys.URL["directory"], sys.URL["content"], sys.URL["community"]}
	queries := []string{"", "?city=berlin", "?q=manager&limit=5", "?page=2", "?search=zur", "?limit=abc", "?space_id=1", "?space_id=2",
		"?job_type=fulltime&remote=1", "?lang=de"}

	tl := newTally(gw)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var seq atomic.Int64
	var mu sync.Mutex
	type owned struct {
		id  int64
		key string
	}
	type replay struct{ idem, body, key string }
	var created []owned
	var replays []replay
	prefix := "Prom " + suite.RandomHex(3) + " "

	// A few subscriptions before the per-IP public limit is spent: the
	// community worker mails them and, with a short confirmation window, times
	// them out, so its workflows and activities run too.
	for i := range 3 {
		do(ctx, tl, "POST", gw+"/v2/newsletters/subscribe",
			fmt.Appendf(nil, `{"email":"prom%d-%s@example.org","name":"P","source":"test","consent":true}`, i, suite.RandomHex(3)))
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			pick := func(s []string) string { return s[rng.IntN(len(s))] }
			for ctx.Err() == nil {
				switch n := rng.IntN(100); {
				case n < 30: // a documented route, keyed three ways
					r := routes[rng.IntN(len(routes))]
					u, k := gw+r.Path+pick(queries), pick(readKeys)
					switch rng.IntN(3) {
					case 0:
						do(ctx, tl, r.Method, u, nil, "X-API-Key", k)
					case 1:
						do(ctx, tl, r.Method, u, nil, "Authorization", "Bearer "+k)
					default:
						sep := "?"
						if strings.Contains(u, "?") {
							sep = "&"
						}
						do(ctx, tl, r.Method, u+sep+"api_key="+k, nil)
					}
				case n < 38: // bad or missing keys
					r := routes[rng.IntN(len(routes))]
					do(ctx, tl, "GET", gw+r.Path, nil, "X-API-Key", pick(badKeys))
				case n < 55: // writes: new jobs of many sizes, some beyond the body limit
					i := seq.Add(1)
					// One in ten beyond the 1 MiB body limit (413).
					size := []int{0, 100, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 64 << 10, 128 << 10, 300 << 10, 2 << 20}[rng.IntN(10)]
					body := jobBody(fmt.Sprintf("%s%06d", prefix, i), size)
					idem := fmt.Sprintf("prom-%d-%s", i, suite.RandomHex(4))
					writer := pick([]string{live, importer, space1})
					code, raw := do(ctx, tl, "POST", gw+"/v2/jobs", body, "X-API-Key", writer, "Idempotency-Key", idem)
					if code == 201 || code == 200 {
						var env suite.Envelope
						var res struct {
							JobID int64 `json:"job_id"`
						}
						if json.Unmarshal(raw, &env) == nil && json.Unmarshal(env.Data, &res) == nil && res.JobID > 0 {
							mu.Lock()
							// A job is changed, and a request replayed, by the key that wrote it.
							created = append(created, owned{res.JobID, writer})
							replays = append(replays, replay{idem, string(body), writer})
							mu.Unlock()
						}
					}
				case n < 63: // replays: the same key and body, or the same key with another body
					mu.Lock()
					var r replay
					if len(replays) > 0 {
						r = replays[rng.IntN(len(replays))]
					}
					mu.Unlock()
					if r.idem != "" {
						if rng.IntN(4) == 0 {
							r.body = string(jobBody("Changed "+suite.RandomHex(3), 10))
						}
						do(ctx, tl, "POST", gw+"/v2/jobs", []byte(r.body), "X-API-Key", r.key, "Idempotency-Key", r.idem)
					}
				case n < 67: // unpublish, twice for some
					mu.Lock()
					var j owned
					if len(created) > 0 {
						j = created[rng.IntN(len(created))]
					}
					mu.Unlock()
					if j.id > 0 {
						do(ctx, tl, "POST", gw+"/v2/jobs/unpublish", fmt.Appendf(nil, `{"job_id":%d}`, j.id), "X-API-Key", j.key)
					}
				case n < 72: // public posts: past their per-IP limit, 429s
					switch rng.IntN(3) {
					case 0:
						do(ctx, tl, "POST", gw+"/v2/feedback", []byte(`{"message":"prometheus feedback"}`))
					case 1:
						do(ctx, tl, "POST", gw+"/v2/newsletters/confirm", []byte(`{"token":"nope"}`))
					default:
						do(ctx, tl, "GET", gw+"/v2/newsletters/unsubscribe?token=nope", nil)
					}
				case n < 82: // odd and very long methods, lowercase ones, on known and unknown paths
					path := []string{"/v2/jobs", "/v2", "/v2/health", "/v2/nope", "/", "/v2/jobs/unpublish", "/v2/blog/" + suite.RandomHex(2)}[rng.IntN(7)]
					do(ctx, tl, pick(oddMethods), gw+path, nil, "X-API-Key", live)
				case n < 90: // unknown paths, malformed bodies, wrong content
					switch rng.IntN(4) {
					case 0:
						do(ctx, tl, "GET", gw+"/v2/"+suite.RandomHex(4)+"/x", nil, "X-API-Key", live)
					case 1:
						do(ctx, tl, "POST", gw+"/v2/jobs", []byte(`{"title":`), "X-API-Key", live)
					case 2:
						do(ctx, tl, "POST", gw+"/v2/jobs", []byte(`{"title":"x"}`), "X-API-Key", restricted)
					default:
						do(ctx, tl, "POST", gw+"/v2/feedback", []byte(strings.Repeat("[", 10000)))
					}
				default: // straight at a backend: refused without an identity, any method, any path
					b := backends[rng.IntN(len(backends))]
					path := []string{"/v2/jobs", "/v2/cities", "/v2/blog", "/v2/events", "/internal/cities/1", "/nope", "/readyz"}[rng.IntN(7)]
					m := pick(append([]string{"GET", "POST"}, oddMethods...))
					var body []byte
					if m == "POST" || m == "post" {
						body = jobBody("direct", rng.IntN(2000))
					}
					do(ctx, tl, m, b+path, body)
				}
			}
		})
	}
	wg.Wait()
	return tl
}
