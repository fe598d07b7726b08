package stats

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkRedirect compares, through the gateway, an apply click
// (GET /go/{job_ref}: job look-up, click counted into the buffer, 302) with
// the plain redirect of the same path length and work minus the counting
// (GET /jobs/{id}: job look-up, 301 to the canonical page). It reports the
// p50 and p99 latencies; docs/benchmarks.md has the figures (never asserted).
//
//	go test -run '^$' -bench BenchmarkRedirect -benchtime 3000x ./e2e/stats/
func BenchmarkRedirect(b *testing.B) {
	pro := sys.Keys["space 1 (Pro) key"]
	id, page := createJob(b, pro, "https://apply.example/bench")
	path := goPath(b, page, "")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"plain", fmt.Sprintf("/jobs/%d", id), http.StatusMovedPermanently},
		{"go", path, http.StatusFound},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", sys.URL["gateway"]+tc.path, nil)
					req.Header.Set("User-Agent", browser)
					start := time.Now()
					res, err := client.Do(req)
					d := time.Since(start)
					if err != nil {
						b.Error(err)
						return
					}
					res.Body.Close()
					if res.StatusCode != tc.status {
						b.Errorf("%s: %d", tc.path, res.StatusCode)
						return
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}
