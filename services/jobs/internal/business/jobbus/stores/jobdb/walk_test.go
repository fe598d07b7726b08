package jobdb

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobdb", pgtest.Schema{Name: "jobs", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}

// counting records how many statements of a listing took the walk.
type counting struct{ walks, sent int }

func (c *counting) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.sent++
	if strings.Contains(d.SQL, "w AS MATERIALIZED") {
		c.walks++
	}
	return ctx
}
func (*counting) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestWalkedPageIsTheRankedPage checks the first pages of searches with many
// matches (Page, which walks the newest jobs when it can) against every match
// ranked (List): the same jobs in the same order, whether the walk served the
// page or gave up, by relevance and by date, at several offsets.
func TestWalkedPageIsTheRankedPage(t *testing.T) {
	ctx := context.Background()
	const space = 4242 // the data set's own scope in the package's database
	// 8 000 active jobs, two per minute (dates tie: the id decides), each
	// tagged coworking; a title names the word in some of them only.
	_, err := pool.Exec(ctx, `INSERT INTO jobs (hash_identifier, space_id, fingerprint, title, company, description, job_type,
		tags, slug, city_id, city_name, city_slug, inv_email, plan_id, status, date_added, expiration_date)
	SELECT 'walk-' || i, $1, 'walk-' || i,
		(ARRAY['Community Manager', 'Community Host', 'Barista', 'Front Desk Host', 'Event Manager', 'Café Manager',
		       'Communities Lead', 'Member Success Lead', 'Space Manager', 'Barista and Host'])[i % 10 + 1]
		    || CASE WHEN i % 500 = 0 THEN ' Coworking' ELSE '' END,
		(ARRAY['Community Co', 'Betahaus', 'Mindspace', 'Factory', 'Impact Hub', 'Ahoy', 'Spaces'])[i % 7 + 1],
		'd', 'fulltime',
		(ARRAY['community,events,coworking', 'coffee,hospitality,coworking', 'community,barista,coworking'])[i % 3 + 1],
		'walk-' || i, 1, 'Berlin', 'berlin', 'a@example.com', 5, 'active',
		now() - (i / 2) * interval '1 minute', now() + interval '30 days'
	FROM generate_series(1, 8000) i`, space)
	if err != nil {
		t.Fatal(err)
	}
	trace := &counting{}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.Tracer = trace
	cfg.MaxConns = 1
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()
	store := New(traced)

	cases := []struct {
		q, sort string
		walked  bool // the walk serves the first page
	}{
		{"community", jobbus.SortRelevance, true},   // "Community …" titles: a fifth of the jobs
		{"communi", jobbus.SortRelevance, true},     // a prefix: no title has it as typed, many by the prefix
		{"comunity", jobbus.SortRelevance, true},    // a typo: no title has it as typed, nor a stem of it
		{"communities", jobbus.SortRelevance, true}, // as typed in a tenth of the titles
		{"manager communi", jobbus.SortRelevance, true},
		{"hospitality", jobbus.SortRelevance, false}, // in tags only: no title has any form of it
		{"community manager", jobbus.SortRelevance, true},
		{`"community manager"`, jobbus.SortRelevance, false}, // 800 matches: ranked at once
		{"community -host", jobbus.SortRelevance, true},
		{"coworking", jobbus.SortRelevance, false}, // 16 titles have it: too few, every match is ranked
		{"coworking", jobbus.SortNewest, true},
		{"managers", jobbus.SortNewest, true},
	}
	for _, c := range cases {
		s, _ := jobbus.ParseSearch(c.q)
		f := func(off int) jobbus.ListFilter {
			return jobbus.ListFilter{Search: s, Sort: c.sort, SpaceID: space, Limit: 20, Offset: off}
		}
		firstTotal := 0
		for _, off := range []int{0, 20, 180} {
			before := trace.walks
			page, total, err := store.Page(ctx, f(off))
			if err != nil {
				t.Fatalf("%q %s offset %d: %v", c.q, c.sort, off, err)
			}
			if off == 0 {
				firstTotal = total
			}
			if walked := trace.walks > before; walked != (total >= walkMinTotal) {
				t.Errorf("%q %s offset %d: walked %v with %d matches", c.q, c.sort, off, walked, total)
			}
			rows, err := store.List(ctx, f(off)) // every match ranked
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			for rows.Next() {
				var j jobbus.Job
				if err := rows.Scan(&j); err != nil {
					t.Fatal(err)
				}
				want = append(want, j.ID)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			got := make([]int64, len(page))
			for i, j := range page {
				got[i] = j.ID
			}
			if !slices.Equal(got, want) || len(got) != 20 {
				t.Errorf("%q %s offset %d: page %v, ranked %v", c.q, c.sort, off, got, want)
			}
		}
		if got := firstTotal >= walkMinTotal && served(t, f(0)); got != c.walked {
			t.Errorf("%q %s: the walk served the first page: %v, want %v", c.q, c.sort, got, c.walked)
		}
	}
}

// served reports whether walkSQL's walk found f's page: the ranking branch
// of its plan was never executed.
func served(t *testing.T, f jobbus.ListFilter) bool {
	t.Helper()
	q, args := walkSQL(f)
	rows, err := pool.Query(context.Background(), `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		// The ranking branch's gate: "(SELECT count(*) FROM w) < k".
		if strings.Contains(l, "One-Time Filter") && strings.Contains(l, " < ") && i+1 < len(lines) {
			return strings.Contains(lines[i+1], "never executed")
		}
	}
	t.Fatalf("no ranking branch in the plan:\n%s", strings.Join(lines, "\n"))
	return false
}
