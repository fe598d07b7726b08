package jobsearch

import (
	"context"
	"strings"
	"testing"
)

// TestWeightedIsInTitle: weighted(q, 'A') is the query PostgreSQL's in_title
// (migration 00006) makes of q, for the shapes search_plan writes (ORs of
// lexemes, prefixes, phrases of a hyphenated word, quotes inside a lexeme),
// and each field's weight matches the same rows as ts_filter: the rank's two
// forms (rankSQL) test the same.
func TestWeightedIsInTitle(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		`'community'`,
		`'community' | 'comun' | 'comunity' | 'comunity':*`,
		`'manag' | 'manager' | 'manager':*`,
		`'co-work' <-> 'co' <-> 'work'`,
		`'o''brien' | 'o''brien':*`,
		`'it''s' & !'x'`,
		`'caf' | 'café':*`,
		`'zürich' | 'zurich'`,
	} {
		// in_title's regular expression takes 'o''brien':* apart (no
		// parser writes a quote into a lexeme, so titles never hold one).
		if !(strings.Contains(q, "''") && strings.Contains(q, ":*")) {
			var want, got string
			if err := pool.QueryRow(ctx, `SELECT in_title($1::tsquery)::text, $2::tsquery::text`, q, weighted(q, 'A')).Scan(&want, &got); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if got != want {
				t.Errorf("weighted(%s, A) = %s, in_title: %s", q, got, want)
			}
		}
		// Each field, on a vector with the word in title (A), tags (B) and
		// company (C) in turn, and in none.
		for _, fld := range []byte{'A', 'B', 'C'} {
			for _, doc := range []string{"A", "B", "C", "none"} {
				var same bool
				if err := pool.QueryRow(ctx, `WITH v AS (SELECT CASE $3 WHEN 'none' THEN to_tsvector('simple', 'other words')
					ELSE setweight(to_tsvector('simple', 'x y ' || replace(replace(replace($1, '''', ''), ':*', ''), '|', ' ')), $3::"char") END AS v)
					SELECT (ts_filter(v, ARRAY[lower($4)]::"char"[]) @@ $1::tsquery) = (v @@ $2::tsquery) FROM v`,
					q, weighted(q, fld), doc, string(fld)).Scan(&same); err != nil {
					t.Fatalf("%s in %c, document %s: %v", q, fld, doc, err)
				}
				if !same {
					t.Errorf("%s held to %c differs from ts_filter on a document weighted %s", q, fld, doc)
				}
			}
		}
	}
}
