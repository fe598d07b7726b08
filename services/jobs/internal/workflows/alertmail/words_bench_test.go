package alertmail

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// BenchmarkMatchWords percolates ALERTS_BENCH_JOBS new jobs (default 20)
// against ALERTS_BENCH_ALERTS confirmed word-only alerts (default 2000, of
// one or two of 500 made-up words), keyed by a word ("word-index") and, as before
// the word index, by "" ("no-index"): searches/op is the distinct searches
// compared with the batch, matches/op the same in both.
func BenchmarkMatchWords(b *testing.B) {
	ctx := context.Background()
	nAlerts, nJobs := envInt("ALERTS_BENCH_ALERTS", 2000), envInt("ALERTS_BENCH_JOBS", 20)
	r, _ := fixture(b)
	run := alertbus.NewNonce()[:6]
	// 500 made-up words of 6 to 9 letters, far apart (a typo of one is
	// rarely another), so what a word matches is about what a real one does.
	rng := rand.New(rand.NewPCG(36, 2))
	words := make([]string, 500)
	for i := range words {
		w := make([]byte, 6+rng.IntN(4))
		for j := range w {
			w[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(w)
	}
	rows := make([][]any, 0, nAlerts)
	for i := range nAlerts {
		search := "q=" + words[i%500]
		if i%3 == 0 {
			search = "q=" + words[i%500] + "+" + words[(i*7)%500]
		}
		f, ok := Parse(search)
		if !ok {
			b.Fatalf("%q does not parse", search)
		}
		rows = append(rows, []any{fmt.Sprintf("w%d-%s@bench.example", i, run), search, alertbus.PercolationKey(f), "daily", "n"})
	}
	// each alert its own address (alert_addresses: stored once)
	emails, searches, pkeys := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		emails[i], searches[i], pkeys[i] = r[0].(string), r[1].(string), r[2].(string)
	}
	if _, err := pool.Exec(ctx, `WITH ad AS (INSERT INTO alert_addresses (email) SELECT unnest($1::text[]) RETURNING id, email)
		INSERT INTO alerts (address_id, search, pkey, frequency, nonce)
		SELECT ad.id, x.search, x.pkey, 'daily', 'n' FROM unnest($1::text[], $2::text[], $3::text[]) x(email, search, pkey)
		JOIN ad ON ad.email = x.email`, emails, searches, pkeys); err != nil {
		b.Fatal(err)
	}
	mine := `address_id IN (SELECT id FROM alert_addresses WHERE email LIKE '%-` + run + `@bench.example')`
	if _, err := pool.Exec(ctx, `UPDATE alerts SET confirmed_at = now() WHERE `+mine); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DELETE FROM alerts WHERE `+mine) })
	drain(b, r)
	var startXid string
	var startSeq int64
	if err := pool.QueryRow(ctx, `SELECT xid::text, seq FROM event_readers WHERE reader = 'alerts'`).Scan(&startXid, &startSeq); err != nil {
		b.Fatal(err)
	}
	for i := range nJobs {
		newJob(b, fmt.Sprintf("%s %s %s %d", words[(i*13)%500], words[(i*29)%500], run, i), "words-bench", "", false)
	}
	drain(b, r) // past the cluster's commit horizon: every round below reads the jobs' events
	matches := map[string]int{}
	for _, mode := range []string{"word-index", "no-index"} {
		if mode == "no-index" {
			if _, err := pool.Exec(ctx, `UPDATE alerts SET pkey = '' WHERE `+mine); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				if _, err := pool.Exec(ctx, `UPDATE event_readers SET xid = $1::xid8, seq = $2 WHERE reader = 'alerts'`, startXid, startSeq); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, `DELETE FROM alert_matches m USING alerts a WHERE a.id = m.alert_id AND a.`+mine); err != nil {
					b.Fatal(err)
				}
				before := alertdb.Compared()
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
				b.ReportMetric(float64(alertdb.Compared()-before), "searches/op")
				b.ReportMetric(float64(matched), "matches/op")
				matches[mode] = matched
			}
		})
	}
	if matches["word-index"] != matches["no-index"] {
		b.Fatalf("the word index found %d matches, comparing every alert %d", matches["word-index"], matches["no-index"])
	}
}
