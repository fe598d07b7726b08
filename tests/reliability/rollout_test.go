package reliability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// drainDelay is the rollout test's SHUTDOWN_DRAIN_DELAY: well above the
// balancer's readiness period (100 ms), as the chart's 5 s is above
// Kubernetes' endpoint propagation.
const drainDelay = time.Second

// A rolling restart of every API, one replica at a time (SIGTERM, wait for
// the process to end, start it again, wait for it to be ready), under
// constant mixed load through the gateway, from clients that keep their
// connections alive and clients that open one per request, loses nothing:
// every request is answered 2xx. Two replicas of each API run behind
// balancers that act as Kubernetes Services (tests/suite), so this is the
// path a Deployment's rollout takes: readiness fails first, the replica
// keeps serving through SHUTDOWN_DRAIN_DELAY with every answer closing its
// connection, then stops gracefully.
func TestRollingRestartUnderLoadLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ten processes")
	}
	db, err := pgtest.Create("rollout")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Drop() }()
	ctx := context.Background()
	sys, err := suite.Start(ctx, suite.Options{Name: "rollout", DatabaseURL: db.URL, Keys: true, Replicas: 2,
		// Ten processes: small pools keep the machine's PostgreSQL (shared
		// with the other test packages) below its max_connections.
		Env: append([]string{"SHUTDOWN_DRAIN_DELAY=" + drainDelay.String(), "DB_MAX_CONNS=3"}, generous...)})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer sys.Stop()
	defer func() {
		if t.Failed() {
			sys.DumpLogs(os.Stderr)
		}
	}()
	gw := sys.URL["gateway"]
	k := sys.Keys[importerKey]
	if k == "" {
		t.Fatalf("no %q in %v", importerKey, sys.Keys)
	}

	type call struct{ method, path, body string }
	calls := []call{
		{"GET", "/v2/jobs", ""}, {"GET", "/v2/cities", ""}, {"GET", "/v2/spaces?limit=5", ""},
		{"GET", "/v2/blog", ""}, {"GET", "/v2/events", ""}, {"GET", "/v2/vine/jobs", ""}, {"GET", "/v2/health", ""},
		{"POST", "/v2/jobs", `{"title":"Rollout %d","company":"Tejo","description":"Front desk","job_type":"parttime","tags":"host","city_name":"Lisbon"}`},
		{"POST", "/v2/feedback", `{"message":"rolling %d","email":"roll@example.org","category":"bug"}`},
	}
	var (
		stop     atomic.Bool
		total    atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	const clients = 6
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Even clients keep connections alive; odd ones open one per request.
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: w%2 == 1, MaxIdleConnsPerHost: 4}}
			for i := 0; !stop.Load(); i++ {
				c := calls[(w+i)%len(calls)]
				n := total.Add(1)
				var body io.Reader
				if c.body != "" {
					body = strings.NewReader(fmt.Sprintf(c.body, n))
				}
				req, _ := http.NewRequest(c.method, gw+c.path, body)
				req.Header.Set("X-API-Key", k)
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s %s: %v", c.method, c.path, err))
					mu.Unlock()
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s %s: %d %.200s", c.method, c.path, resp.StatusCode, raw))
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}(w)
	}

	// Every API, one replica at a time, as a Deployment's RollingUpdate
	// with maxUnavailable 0 does (the new pod is ready before the old stops;
	// here the other replica carries the load meanwhile).
	started := time.Now()
	restarts := 0
	for _, api := range []string{"gateway", "jobs", "directory", "content", "community"} {
		for _, r := range sys.Replicas(api) {
			if err := sys.Terminate(r); err != nil {
				t.Errorf("terminate %s: %v", r, err)
			}
			if err := sys.Start(ctx, r); err != nil {
				t.Fatalf("start %s again: %v", r, err)
			}
			restarts++
			time.Sleep(300 * time.Millisecond) // the balancer sees it ready
		}
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d restarts in %s under %d requests", restarts, time.Since(started).Round(time.Second), total.Load())
	if total.Load() < 200 {
		t.Fatalf("only %d requests: the load did not run", total.Load())
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during the rollout, e.g.:\n%s", len(failures), total.Load(),
			strings.Join(failures[:min(len(failures), 20)], "\n"))
	}
}
