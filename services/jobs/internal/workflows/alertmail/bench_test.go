package alertmail

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkMatch percolates ALERTS_BENCH_JOBS new jobs (default 20) against
// ALERTS_BENCH_ALERTS confirmed alerts (default 1000) of random cities, tags
// and words: one op is every match of the batch found and recorded. The
// issue's figure: ALERTS_BENCH_ALERTS=100000 ALERTS_BENCH_JOBS=2000.
func BenchmarkMatch(b *testing.B) {
	ctx := context.Background()
	nAlerts, nJobs := envInt("ALERTS_BENCH_ALERTS", 1000), envInt("ALERTS_BENCH_JOBS", 20)
	r, _ := fixture(b)
	run := fmt.Sprintf("bench%d", nAlerts)
	// 50 cities, 20 tags, 30 words: searches of one to three criteria.
	// each alert its own address (alert_addresses: stored once)
	if _, err := pool.Exec(ctx, `INSERT INTO alert_addresses (email)
		SELECT 'a' || i || '-' || $2 || '@bench.example' FROM generate_series(1, $1) i ON CONFLICT DO NOTHING`, nAlerts, run); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO alerts (address_id, search, pkey, frequency, nonce, confirmed_at)
		SELECT (SELECT id FROM alert_addresses WHERE email = 'a' || i || '-' || $2 || '@bench.example'), s.search, s.pkey, 'daily', 'n', now()
		FROM generate_series(1, $1) i,
		LATERAL (SELECT CASE WHEN i % 4 = 0 THEN 'tag=t' || (i % 20) || '&q=w' || (i % 30)
		                     WHEN i % 4 = 1 THEN 'city=c' || (i % 50) || '&q=w' || (i % 30)
		                     WHEN i % 4 = 2 THEN 'city=c' || (i % 50) || '&tag=t' || (i % 20)
		                     ELSE 'city=c' || (i % 50) END AS search,
		                CASE WHEN i % 4 = 0 THEN 'tag:t' || (i % 20) ELSE 'city:c' || (i % 50) END AS pkey) s
		ON CONFLICT DO NOTHING`, nAlerts, run); err != nil {
		b.Fatal(err)
	}
	drain(b, r)
	jobRun := alertbus.NewNonce()[:6]
	var startXid string
	var startSeq int64
	if err := pool.QueryRow(ctx, `SELECT xid::text, seq FROM event_readers WHERE reader = 'alerts'`).Scan(&startXid, &startSeq); err != nil {
		b.Fatal(err)
	}
	for i := range nJobs {
		// new jobs on every call (the framework calls again with a larger
		// b.N): the same titles would be updates, visible already, no match
		newJob(b, fmt.Sprintf("w%d w%d %s %s %d", i%30, (i*7)%30, run, jobRun, i), fmt.Sprintf("c%d", i%50),
			fmt.Sprintf("t%d,t%d", i%20, (i*3)%20), false)
	}
	drain(b, r) // past the cluster's commit horizon, else a round may read none of the jobs' events
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := pool.Exec(ctx, `UPDATE event_readers SET xid = $1::xid8, seq = $2 WHERE reader = 'alerts'`, startXid, startSeq); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM alert_matches m USING alerts a, alert_addresses aa
			WHERE a.id = m.alert_id AND aa.id = a.address_id AND aa.email LIKE '%@bench.example'`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		matched := 0
		run := &eventbus.Runner{Store: r.Readers, Reader: Reader, Batch: MatchBatch,
			Handle: func(ctx context.Context, evs []jobbus.JobEvent) error {
				m, err := r.Store.Match(ctx, evs, Parse)
				matched += m
				return err
			}}
		if _, err := run.Run(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(matched), "matches/op")
	}
}
