package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one request of a Load's mix; a %d in Body becomes the request's
// sequence number, so that every write is distinct.
type Call struct {
	Method, Path, Body string
}

// MixedCalls reads every API and writes a job and a feedback: the traffic the
// rollout tests (processes here, pods in tests/cluster) keep up meanwhile.
var MixedCalls = []Call{
	{"GET", "/v2/jobs", ""}, {"GET", "/v2/cities", ""}, {"GET", "/v2/spaces?limit=5", ""},
	{"GET", "/v2/blog", ""}, {"GET", "/v2/events", ""}, {"GET", "/v2/vine/jobs", ""}, {"GET", "/v2/health", ""},
	{"POST", "/v2/jobs", `{"title":"Rollout %d","company":"Tejo","description":"Front desk","job_type":"parttime","tags":"host","city_name":"Lisbon"}`},
	{"POST", "/v2/feedback", `{"message":"rolling %d","email":"roll@example.org","category":"bug"}`},
}

// Load sends Calls to URL with Key from Clients goroutines until Stop: even
// clients keep their connections alive, odd ones open one per request (what a
// Service's balancing and a server's drain treat differently). It counts every
// request, keeps every failure (a transport error or an answer outside 2xx)
// with its time, and the ids of the jobs whose creation was acknowledged.
type Load struct {
	URL, Key string
	Calls    []Call
	Clients  int
	// KeepAlive: every client keeps its connections (default: odd ones
	// open one per request).
	KeepAlive bool
	Pause     time.Duration // between one client's requests
	Timeout   time.Duration // per request (default 10 s)

	stop  atomic.Bool
	total atomic.Int64
	wg    sync.WaitGroup

	mu       sync.Mutex
	failures []Failure
	created  []int64
}

// Failure is one failed request of a Load.
type Failure struct {
	At     time.Time
	Status int // 0: no answer
	What   string
}

func (f Failure) String() string {
	return f.At.Format("15:04:05.000") + " " + f.What
}

// Start begins the load; Stop ends it and waits for the clients.
func (l *Load) Start() {
	timeout := l.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	for w := 0; w < l.Clients; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			client := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: !l.KeepAlive && w%2 == 1, MaxIdleConnsPerHost: 4}}
			defer client.CloseIdleConnections()
			for i := 0; !l.stop.Load(); i++ {
				l.do(client, l.Calls[(w+i)%len(l.Calls)])
				time.Sleep(l.Pause)
			}
		}(w)
	}
}

func (l *Load) do(client *http.Client, c Call) {
	n := l.total.Add(1)
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(fmt.Sprintf(c.Body, n))
	}
	req, err := http.NewRequest(c.Method, l.URL+c.Path, body)
	if err != nil {
		l.fail(0, fmt.Sprintf("%s %s: %v", c.Method, c.Path, err))
		return
	}
	req.Header.Set("X-API-Key", l.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		l.fail(0, fmt.Sprintf("%s %s: %v", c.Method, c.Path, err))
		return
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		l.fail(resp.StatusCode, fmt.Sprintf("%s %s: %d %.200s", c.Method, c.Path, resp.StatusCode, raw))
		return
	}
	if c.Method == http.MethodPost && c.Path == "/v2/jobs" {
		var env struct {
			Data struct {
				ID int64 `json:"job_id"`
			} `json:"data"`
		}
		if json.Unmarshal(raw, &env) == nil && env.Data.ID > 0 {
			l.mu.Lock()
			l.created = append(l.created, env.Data.ID)
			l.mu.Unlock()
		}
	}
}

func (l *Load) fail(status int, what string) {
	l.mu.Lock()
	l.failures = append(l.failures, Failure{At: time.Now(), Status: status, What: what})
	l.mu.Unlock()
}

// Stop ends the load and waits for every client's last request.
func (l *Load) Stop() {
	l.stop.Store(true)
	l.wg.Wait()
}

// Total is the number of requests sent so far.
func (l *Load) Total() int64 { return l.total.Load() }

// Failures are the failed requests so far, in the order they failed.
func (l *Load) Failures() []Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Failure(nil), l.failures...)
}

// Created are the ids of the jobs whose creation was acknowledged (2xx).
func (l *Load) Created() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.created...)
}

// Summary lists up to n failures, one per line.
func Summary(fs []Failure, n int) string {
	lines := make([]string, 0, min(n, len(fs)))
	for _, f := range fs[:min(n, len(fs))] {
		lines = append(lines, f.String())
	}
	return strings.Join(lines, "\n")
}
