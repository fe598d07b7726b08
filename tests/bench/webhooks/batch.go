package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// The batch phase (issue 46): does a 1 000-row batch hold back a single
// post's webhook? Singles are posted every singleEvery, first alone
// (the baseline), then while a batch of batchRows new jobs is applied as
// an operation; each single's delay is from its POST's answer to the last
// endpoint's 2xx receipt of its job.created. The batch's own job.created
// deliveries are counted too (none lost).
const (
	batchRows     = 1000
	singleEvery   = 250 * time.Millisecond
	minSingles    = 8
	batchDeadline = 3 * time.Minute
)

type batchResult struct {
	alone, during []time.Duration // each single's delay
	batchTook     time.Duration   // POST to the GET that said done
	batchHeard    time.Duration   // POST to the last endpoint's receipt of the batch's last job.created
	batchJobs     int
	batchLost     int // batch jobs not heard by every endpoint in the end
	singlesLost   int
	load          [3]string
}

type single struct {
	id    int64
	acked time.Time
}

// postSingles posts a single create every singleEvery until stop is closed
// and at least minSingles were posted.
func (b *bench) postSingles(ctx context.Context, stop <-chan struct{}) ([]single, error) {
	var out []single
	tick := time.NewTicker(singleEvery)
	defer tick.Stop()
	for {
		j, err := b.create(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, single{j.id, time.Now()})
		select {
		case <-stop:
			if len(out) >= minSingles {
				return out, nil
			}
		default:
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-tick.C:
		}
	}
}

// heard waits until every endpoint answered 2xx to the job.created of each
// id (at most d) and returns how many are still not heard by all.
func (b *bench) heard(ids []int64, d time.Duration) int {
	for deadline := time.Now().Add(d); ; time.Sleep(200 * time.Millisecond) {
		b.rcv.mu.Lock()
		missing := 0
		for _, id := range ids {
			if len(b.rcv.created[id]) < b.cfg.Endpoints {
				missing++
			}
		}
		b.rcv.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			return missing
		}
	}
}

// lastReceipt is the last endpoint's 2xx receipt of the last of ids'
// job.created (their first receipts: a redelivery does not count).
func (b *bench) lastReceipt(ids []int64) time.Time {
	b.rcv.mu.Lock()
	defer b.rcv.mu.Unlock()
	var last time.Time
	for _, id := range ids {
		for _, at := range b.rcv.created[id] {
			if at.After(last) {
				last = at
			}
		}
	}
	return last
}

// delays are the singles' delays: POST answered to the last endpoint's
// receipt.
func (b *bench) delays(ss []single) []time.Duration {
	b.rcv.mu.Lock()
	defer b.rcv.mu.Unlock()
	var out []time.Duration
	for _, s := range ss {
		at := b.rcv.created[s.id]
		if len(at) < b.cfg.Endpoints {
			continue
		}
		last := slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		out = append(out, last.Sub(s.acked))
	}
	slices.Sort(out)
	return out
}

func (b *bench) batchPhase(ctx context.Context) (*batchResult, error) {
	imp, err := b.key(ctx, "-name", "bench-importer", "-scopes", "read,write", "-trusted-importer", "-rate-limit", "1000000")
	if err != nil {
		return nil, err
	}
	res := &batchResult{}
	b.rcv.reset(-1)
	stop := make(chan struct{})
	close(stop)
	alone, err := b.postSingles(ctx, stop)
	if err != nil {
		return nil, err
	}
	ids := func(ss []single) []int64 {
		out := make([]int64, len(ss))
		for i, s := range ss {
			out[i] = s.id
		}
		return out
	}
	res.singlesLost += b.heard(ids(alone), time.Minute)
	res.alone = b.delays(alone)

	var sb strings.Builder
	token := fmt.Sprint(time.Now().UnixNano())
	sb.WriteString(`{"mode":"upsert","jobs":[`)
	for i := range batchRows {
		if i > 0 {
			sb.WriteByte(',')
		}
		body := jobBody(fmt.Sprintf("Batch Bench Host %s %d", token, i), "Host our members.")
		sb.WriteString(strings.TrimSuffix(body, "}"))
		fmt.Fprintf(&sb, `,"external_ref":"wb-%s-%d"}`, token, i)
	}
	sb.WriteString(`]}`)
	stop = make(chan struct{})
	var wg sync.WaitGroup
	var batchErr error
	var batchIDs []int64
	var began time.Time
	wg.Go(func() {
		defer close(stop)
		began = time.Now()
		st, out := b.do(ctx, "POST", "/v2/jobs/batch", imp, sb.String())
		if st != 202 {
			batchErr = fmt.Errorf("batch: %d %.300s", st, out)
			return
		}
		var op struct {
			Data struct {
				URL     string `json:"url"`
				Status  string `json:"status"`
				Results []struct {
					Action string `json:"action"`
					JobID  *int64 `json:"job_id"`
				} `json:"results"`
			} `json:"data"`
		}
		_ = json.Unmarshal(out, &op)
		for deadline := time.Now().Add(batchDeadline); op.Data.Status != "done"; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				batchErr = fmt.Errorf("batch not done in %s", batchDeadline)
				return
			}
			st, out := b.do(ctx, "GET", op.Data.URL, imp, "")
			if st != 200 || json.Unmarshal(out, &op) != nil {
				batchErr = fmt.Errorf("batch operation: %d %.300s", st, out)
				return
			}
		}
		res.batchTook = time.Since(began)
		for _, r := range op.Data.Results {
			if r.Action == "created" && r.JobID != nil {
				batchIDs = append(batchIDs, *r.JobID)
			}
		}
	})
	during, err := b.postSingles(ctx, stop)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if batchErr != nil {
		return nil, batchErr
	}
	res.load = loadavg()
	res.batchJobs = len(batchIDs)
	res.singlesLost += b.heard(ids(during), 2*time.Minute)
	res.batchLost = b.heard(batchIDs, 2*time.Minute)
	res.during = b.delays(during)
	if last := b.lastReceipt(batchIDs); !last.IsZero() {
		res.batchHeard = last.Sub(began)
	}
	note("batch: %d singles alone, max delay %v; %d during the batch (%v, all heard after %v), max delay %v; batch jobs not heard everywhere %d",
		len(res.alone), pct(res.alone, 100), len(res.during), res.batchTook, res.batchHeard, pct(res.during, 100), res.batchLost)
	return res, nil
}

func (r *batchResult) print(w io.Writer, endpoints int) {
	fmt.Fprintf(w, "\nA single post's webhook while a %d-row batch is applied (issue 46): singles posted every %s by a space key, "+
		"delay from the POST's answer to the last of %d endpoints' 2xx receipt of its job.created:\n\n", batchRows, singleEvery, endpoints)
	fmt.Fprintln(w, "| singles | count | p50 | max |\n|---|--:|--:|--:|")
	fmt.Fprintf(w, "| alone | %d | %v | %v |\n", len(r.alone), rd(pct(r.alone, 50)), rd(pct(r.alone, 100)))
	fmt.Fprintf(w, "| during the batch | %d | %v | %v |\n", len(r.during), rd(pct(r.during, 50)), rd(pct(r.during, 100)))
	fmt.Fprintf(w, "\nThe batch: %d jobs created, applied in %v (POST to done); every endpoint had every batch job's job.created %v after the POST "+
		"(%.0f deliveries/s); its jobs not heard by every endpoint in the end: %d; singles not heard: %d. Load after: %s.\n",
		r.batchJobs, rd(r.batchTook), rd(r.batchHeard), float64(r.batchJobs*endpoints)/max(r.batchHeard.Seconds(), 1e-3),
		r.batchLost, r.singlesLost, strings.Join(r.load[:], " "))
}
