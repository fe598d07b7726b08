package alertdb

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// wordKeysSQL picks, among the word keys of the alerts matching could
// compare (alertbus.WordKey), those whose word one of the jobs may match as
// the listing's per-word query (term_queries) reads it: the word exact,
// stemmed in the board's languages or as a prefix, asked of the jobs'
// vectors; or within its typos, a word of the jobs at most twice its typos
// away by Levenshtein (term_queries' own bound: an optimal-string-alignment
// distance of fuzz is a Levenshtein one of at most 2*fuzz). That is a
// superset of what the search matches, so no match is lost, and a job
// that matches none of a search's word keys is never compared with it
// (BenchmarkMatchWords). The typos are checked against the batch's own
// words rather than the lexicon term_queries reads, which would cost a
// trigram look-up per word key and round.
const wordKeysSQL = `WITH k AS (
	SELECT DISTINCT pkey FROM alerts WHERE confirmed_at IS NOT NULL AND NOT paused AND pkey LIKE 'word:%'),
w AS (SELECT pkey, split_part(pkey, ':', 2) AS word, lower(f_unaccent(split_part(pkey, ':', 2))) AS folded,
             left(split_part(pkey, ':', 3), 1) = 'P' AS prefix, substr(split_part(pkey, ':', 3), 2)::integer AS fuzz
      FROM k WHERE split_part(pkey, ':', 3) ~ '^[PE][0-9]$'),
q AS MATERIALIZED (SELECT pkey, folded, fuzz, or_distinct(plainto_tsquery('simple_u', word), plainto_tsquery('english_u', word),
             plainto_tsquery('german_u', word), plainto_tsquery('french_u', word), plainto_tsquery('spanish_u', word),
             plainto_tsquery('italian_u', word), plainto_tsquery('portuguese_u', word), plainto_tsquery('dutch_u', word),
             CASE WHEN prefix THEN to_tsquery('simple_u', quote_literal(folded) || ':*') ELSE plainto_tsquery('simple_u', word) END) AS tq
      FROM w),
lx AS MATERIALIZED (SELECT DISTINCT l FROM jobs, unnest(tsvector_to_array(search_vector)) AS l
                    WHERE id = ANY($1) AND status = 'active'),
-- every word of the batch in one vector (no positions: a phrase query
-- reads as all of its words, a superset again)
batch AS MATERIALIZED (SELECT array_to_tsvector(coalesce(array_agg(l), '{}')) AS v FROM lx)
SELECT pkey FROM q, batch
WHERE batch.v @@ q.tq
   OR (q.fuzz > 0 AND EXISTS (SELECT 1 FROM lx WHERE abs(length(lx.l) - length(q.folded)) <= 2 * q.fuzz
                              AND public.levenshtein_less_equal(lx.l, q.folded, 2 * q.fuzz) <= 2 * q.fuzz))`

// wordKeys are the word keys the jobs answer to.
func wordKeys(ctx context.Context, tx pgx.Tx, jobIDs []int64) ([]string, error) {
	rows, err := tx.Query(ctx, wordKeysSQL, jobIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
