package main

import (
	"context"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// rateResult is a constant-rate run: latencies are measured from each
// request's scheduled start, not from when a connection was free, so a stall
// shows in the percentiles instead of silently lowering the rate (the
// coordinated-omission correction wrk2 makes).
type rateResult struct {
	Sent, OK, Errors, Dropped int64
	P50, P99, Max             time.Duration
	Duration                  time.Duration
}

// runRate sends rate requests per second for d, open loop, cycling paths,
// with at most maxInFlight outstanding (beyond that a request is dropped and
// counted as an error rather than delaying the schedule).
func runRate(ctx context.Context, base string, paths []string, headers map[string]string, rate int, d time.Duration, maxInFlight int) rateResult {
	client := &http.Client{
		Timeout: 10 * time.Second,
		// At most 64 connections, like a client's pool: a burst waits for one
		// (and the wait counts) instead of dialling past the server's cap.
		Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true},
		// A redirect is the answer measured (the apply redirect's row), not
		// the place it leads to.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, n)
		res       rateResult
		wg        sync.WaitGroup
	)
	sem := make(chan struct{}, maxInFlight)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		res.Sent++
		select {
		case sem <- struct{}{}:
		default:
			res.Dropped++
			continue
		}
		wg.Add(1)
		go func(path string, at time.Time) {
			defer wg.Done()
			defer func() { <-sem }()
			ok := false
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			if err == nil {
				for k, v := range headers {
					req.Header.Set(k, v)
				}
				var resp *http.Response
				if resp, err = client.Do(req); err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					ok = err == nil && resp.StatusCode < 400
				}
			}
			lat := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				res.OK++
				latencies = append(latencies, lat)
			} else {
				res.Errors++
			}
		}(paths[i%len(paths)], at)
	}
	wg.Wait()
	res.Duration = time.Since(start)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	res.P50, res.P99 = percentile(latencies, 50), percentile(latencies, 99)
	if len(latencies) > 0 {
		res.Max = latencies[len(latencies)-1]
	}
	return res
}

// percentile of sorted values (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
