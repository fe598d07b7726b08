package jobsearch

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobsearch", pgtest.Schema{Name: "jobs", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}

// counting records how many statements of a listing took the walk, or the
// points, and how many computed a search's plan.
type counting struct{ walks, points, plans, sent int }

func (c *counting) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.sent++
	if strings.Contains(d.SQL, "search_plan(") {
		c.plans++
	}
	if strings.Contains(d.SQL, "w AS MATERIALIZED") {
		c.walks++
	}
	if strings.Contains(d.SQL, "LATERAL") {
		c.points++
	}
	return ctx
}
func (*counting) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// tracedStore is one connection of the package's database whose statements
// trace counts.
func tracedStore(t *testing.T) (*pgxpool.Pool, *counting) {
	t.Helper()
	trace := &counting{}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.Tracer = trace
	cfg.MaxConns = 1
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return traced, trace
}

// listed is what List streams for f: every match, ranked or sorted.
func listed(t *testing.T, store DB, f jobbus.ListFilter) []jobbus.Job {
	t.Helper()
	rows, err := List(context.Background(), store, f)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var jobs []jobbus.Job
	for rows.Next() {
		var j jobbus.Job
		if err := rows.Scan(&j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return jobs
}

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
	store, trace := tracedStore(t)

	cases := []struct {
		q, sort string
		walked  bool // the walk serves the first page at the best possible rank (a plan kept without its best rank)
		kept    bool // and with the plan counted, which knows the best rank a match has (Page, and a kept total)
	}{
		{"community", jobbus.SortRelevance, true, true},   // "Community …" titles: a fifth of the jobs
		{"communi", jobbus.SortRelevance, true, true},     // a prefix: no title has it as typed, many by the prefix
		{"comunity", jobbus.SortRelevance, true, true},    // a typo: no title has it as typed, nor a stem of it
		{"communities", jobbus.SortRelevance, true, true}, // as typed in a tenth of the titles
		{"manager communi", jobbus.SortRelevance, true, true},
		{"hospitality", jobbus.SortRelevance, false, true},     // in tags only: no title has any form of it
		{"impact hub", jobbus.SortRelevance, false, true},      // a company's name
		{"barista manager", jobbus.SortRelevance, false, true}, // no title has both: a manager tagged barista is best
		{"community manager", jobbus.SortRelevance, true, true},
		{`"community manager"`, jobbus.SortRelevance, false, false}, // 800 matches: ranked at once
		{"community -host", jobbus.SortRelevance, true, true},
		{"coworking", jobbus.SortRelevance, false, false}, // 16 titles have it: too few, every match is ranked
		{"coworking", jobbus.SortNewest, true, true},
		{"managers", jobbus.SortNewest, true, true},
	}
	for _, c := range cases {
		s, _ := jobbus.ParseSearch(c.q)
		f := func(off int) jobbus.ListFilter {
			return jobbus.ListFilter{Search: s, Sort: c.sort, SpaceID: space, Limit: 20, Offset: off}
		}
		firstTotal := 0
		for _, off := range []int{0, 20, 180, 400} { // 400: past the walk, ranked
			before := trace.walks
			page, total, err := Page(ctx, store, f(off))
			if err != nil {
				t.Fatalf("%q %s offset %d: %v", c.q, c.sort, off, err)
			}
			if off == 0 {
				firstTotal = total
			}
			if walked := trace.walks > before; walked != (total >= walkMinTotal && off+20 <= walkMaxRows) {
				t.Errorf("%q %s offset %d: walked %v with %d matches", c.q, c.sort, off, walked, total)
			}
			got, want := ids(page), ids(listed(t, store, f(off))) // every match ranked
			if !slices.Equal(got, want) || len(got) != 20 {
				t.Errorf("%q %s offset %d: page %v, ranked %v", c.q, c.sort, off, got, want)
			}
			kept, keptWalked := plannedPage(t, store, trace, f(off), total)
			if !slices.Equal(ids(kept), got) {
				t.Errorf("%q %s offset %d: the page from the kept plan differs", c.q, c.sort, off)
			}
			if off == 0 && keptWalked != c.kept {
				t.Errorf("%q %s: the walk served the first page with the plan kept: %v, want %v", c.q, c.sort, keptWalked, c.kept)
			}
		}
		if got := firstTotal >= walkMinTotal && served(t, planned(f(0), nil)); got != c.walked {
			t.Errorf("%q %s: the walk served the first page: %v, want %v", c.q, c.sort, got, c.walked)
		}
	}
}

// served reports whether walkSQL's walk found f's page: the ranking branch
// of its plan was never executed.
func served(t *testing.T, f listing) bool {
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

// TestPointsPageIsTheSortedPage checks pages near a point (Page, which takes
// the points in the circle one by one) against every job in the circle
// sorted by distance (List): points at equal distances, a point outside the
// circle, with and without a search, at several offsets.
func TestPointsPageIsTheSortedPage(t *testing.T) {
	ctx := context.Background()
	const space = 4343
	// 2 400 jobs over five points around (52.52, 13.40): at the centre, two
	// 10 km away in opposite directions (one distance), 30 km and 80 km.
	_, err := pool.Exec(ctx, `INSERT INTO jobs (hash_identifier, space_id, fingerprint, title, company, description, job_type,
		tags, slug, city_id, city_name, city_slug, city_lat, city_lon, inv_email, plan_id, status, date_added, expiration_date)
	SELECT 'near-' || i, $1, 'near-' || i, (ARRAY['Community Manager', 'Barista', 'Host'])[i % 3 + 1], 'Acme', 'd', 'fulltime',
		'community', 'near-' || i, 1, 'City', (ARRAY['centre', 'north', 'south', 'west', 'far'])[i % 5 + 1],
		52.52 + (ARRAY[0, 0.0899, -0.0899, 0, 0])[i % 5 + 1], 13.40 + (ARRAY[0, 0, 0, -0.4418, 1.1781])[i % 5 + 1],
		'a@example.com', 5, 'active', now() - (i / 2) * interval '1 minute', now() + interval '30 days'
	FROM generate_series(1, 2400) i`, space)
	if err != nil {
		t.Fatal(err)
	}
	store, trace := tracedStore(t)
	for _, q := range []string{"", "community", "barista"} {
		s, _ := jobbus.ParseSearch(q)
		for _, off := range []int{0, 20, 180, 460} {
			f := jobbus.ListFilter{Search: s, Sort: jobbus.SortDistance, SpaceID: space, Limit: 20, Offset: off,
				Near: &geo.Near{Lat: 52.52, Lon: 13.40, RadiusKm: 50}}
			before := trace.points
			page, total, err := Page(ctx, store, f)
			if err != nil {
				t.Fatalf("%q offset %d: %v", q, off, err)
			}
			if walked := trace.points > before; walked != ((q == "" || total >= walkMinTotal) && off+20 <= walkMaxRows) {
				t.Errorf("%q offset %d: taken point by point %v with %d matches", q, off, walked, total)
			}
			if kept, _ := plannedPage(t, store, trace, f, total); !slices.Equal(ids(kept), ids(page)) {
				t.Errorf("%q offset %d: the page from the kept plan differs", q, off)
			}
			want := listed(t, store, f) // every job in the circle sorted
			if len(page) != len(want) || (len(want) == 0) != (off >= total) {
				t.Fatalf("%q offset %d: %d jobs, sorted %d (total %d)", q, off, len(page), len(want), total)
			}
			for i := range want {
				if page[i].ID != want[i].ID || page[i].DistanceKm == nil || *page[i].DistanceKm != *want[i].DistanceKm {
					t.Fatalf("%q offset %d: job %d is %d, sorted %d", q, off, i, page[i].ID, want[i].ID)
				}
			}
		}
	}
}

// plannedPage is f's page as the business layer reads it with the total kept:
// counted with its search's plan (Count), the plan kept as text (JSON, in the
// memo) and the page read with it (PageOf), which must not compute it again;
// and whether the walk served it, which it must whenever it does without the
// plan.
func plannedPage(t *testing.T, store DB, trace *counting, f jobbus.ListFilter, total int) ([]jobbus.Job, bool) {
	t.Helper()
	ctx := context.Background()
	c, err := Count(ctx, store, f)
	if err != nil {
		t.Fatal(err)
	}
	if c.N != total || (c.Plan == nil) != f.Search.Empty() {
		t.Fatalf("counted %d with plan %v, want %d and a plan for a search", c.N, c.Plan, total)
	}
	if c.Plan == nil {
		return mustPageOf(t, store, f, total, nil), false
	}
	kept, err := c.Plan.Encode()
	if err != nil {
		t.Fatal(err)
	}
	plan := DecodePlan(kept)
	if plan == nil {
		t.Fatalf("the kept plan does not decode: %s", kept)
	}
	if n, err := Expired(ctx, store, f, c.At, plan); err != nil || n != 0 {
		t.Fatalf("expired with the plan: %d, %v", n, err)
	}
	before := trace.plans
	page := mustPageOf(t, store, f, total, plan)
	if trace.plans != before {
		t.Fatalf("the page computed the plan it was given (%s)", kept)
	}
	walked := walks(planned(f, plan), total) && served(t, planned(f, plan))
	if !walked && walks(planned(f, plan), total) && served(t, planned(f, nil)) {
		t.Fatalf("the walk served the page without the plan, not with it (%s)", kept)
	}
	return page, walked
}

func mustPageOf(t *testing.T, store DB, f jobbus.ListFilter, total int, plan *Plan) []jobbus.Job {
	t.Helper()
	page, err := PageOf(context.Background(), store, f, total, plan)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// ids are a page's job ids.
func ids(jobs []jobbus.Job) []int64 {
	r := make([]int64, len(jobs))
	for i, j := range jobs {
		r[i] = j.ID
	}
	return r
}
