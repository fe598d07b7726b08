package alertdb

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// wordKeysSQL picks, among the word keys of the alerts matching could
// compare (alertbus.WordKey), those whose word one of the jobs matches, by
// the listing's own per-word query (term_queries: the word exact, stemmed
// in the board's languages, as a prefix, within its typos): a job that does
// not match the word cannot be listed by a search that needs it, so its
// other alerts are never compared (BenchmarkMatchWords).
const wordKeysSQL = `WITH k AS (
	SELECT DISTINCT pkey FROM alerts WHERE confirmed_at IS NOT NULL AND NOT paused AND pkey LIKE 'word:%'),
w AS (SELECT pkey, split_part(pkey, ':', 2) AS word, split_part(pkey, ':', 3) AS mode FROM k),
q AS (SELECT w.pkey, or_distinct(t.exact, t.stem, t.typo) AS tq
      FROM w, LATERAL term_queries(w.word, left(w.mode, 1) = 'P', substr(w.mode, 2)::integer) t
      WHERE w.mode ~ '^[PE][0-9]$')
SELECT q.pkey FROM q WHERE numnode(q.tq) > 0
  AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = ANY($1) AND j.status = 'active' AND j.search_vector @@ q.tq)`

// wordKeys are the word keys the jobs answer to.
func wordKeys(ctx context.Context, tx pgx.Tx, jobIDs []int64) ([]string, error) {
	rows, err := tx.Query(ctx, wordKeysSQL, jobIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
