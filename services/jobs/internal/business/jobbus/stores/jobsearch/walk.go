package jobsearch

import (
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// The first page of a search with many matches is looked for among the
// newest walkScan active jobs the other filters admit (walkSQL) before every
// match is ranked (docs/search.md; make bench -growth, row b1 at 1 M jobs).
const (
	walkScan     = 2000 // newest rows the walk reads at most
	walkMinTotal = 1000 // fewer matches are ranked about as cheaply as walked
	walkMaxRows  = 200  // offset + limit the walk may serve
)

// withCTE adds cte to a statement's WITH, starting one when there is none.
func withCTE(with, cte string) string {
	if with == "" {
		return `WITH ` + cte + ` `
	}
	return with[:len(with)-1] + `, ` + cte + ` `
}

// bound writes a LIMIT or OFFSET of the walks into the statement rather
// than as a parameter. PostgreSQL plans a prepared statement anew at every
// execution while its generic plan, which cannot know a parameter LIMIT,
// looks costlier than a custom one, and planning is then much of the page
// (make bench -growth, row b1 at 1 M jobs). The walks' values are bounded
// (walkMaxRows), so the statements stay few.
func bound(n int) string { return strconv.Itoa(n) }

// walks reports whether f's page may be looked for by walkSQL first: a
// search ordered by relevance or by date, not by distance.
func walks(f listing, total int) bool {
	return f.Limit > 0 && !f.Search.Empty() && f.Near == nil && f.Sort != jobbus.SortDistance &&
		total >= walkMinTotal && f.Offset+f.Limit <= walkMaxRows
}

// initPlans turns the search conditions' references to t into InitPlans, so
// that a walk keeps its index's order and stops at the k-th row instead of
// joining t and sorting.
var initPlans = strings.NewReplacer("t.match", "(SELECT match FROM t)", "t.walk", "(SELECT walk FROM t)",
	"t.top_exact", "(SELECT top_exact FROM t)", "t.top_form", "(SELECT top_form FROM t)", "t.phrase", "(SELECT phrase FROM t)",
	"t.top_score", "(SELECT top_score FROM t)")

// topLevel holds a row with the best rank any row can have: every word in
// the title in the best form some title has (search_plan's top); the
// walk's form of it reads t through InitPlans.
const topLevel = `t.walk AND (t.top_exact IS NULL OR search_exact @@ t.top_exact)
			AND (t.top_form IS NULL OR search_vector @@ t.top_form)`

var walkTopLevel = initPlans.Replace(topLevel)

// walkRanks are walkRank's conditions, built once rather than per request
// (BenchmarkWalkSQLKept).
var walkRanks = func() []string {
	r := make([]string, jobbus.MaxSearchTerms+1)
	for i := range r {
		r[i] = walkRankSQL(i)
	}
	return r
}()

// walkRank is the walk's condition with the best rank kept: the rank of
// the row at least the top score.
func walkRank(words int) string {
	if words < len(walkRanks) {
		return walkRanks[words]
	}
	return walkRankSQL(words)
}

// walkRankSQL is walkRank's condition with each word's field query an
// InitPlan of its own, a scalar, rather than an array InitPlan subscripted
// for every walked row (make bench row b1).
func walkRankSQL(words int) string {
	var r []string
	for i := 1; i <= words; i++ {
		for _, col := range rankColumns {
			for _, fld := range fieldWeights {
				name := col + "_" + fld + "[" + strconv.Itoa(i) + "]"
				r = append(r, "t."+name, "(SELECT "+name+" FROM t)")
			}
		}
	}
	return initPlans.Replace(strings.NewReplacer(r...).Replace(rank(words, true) + ` >= t.top_score`))
}

// walksPoints reports whether f's page is found point by point (pointsSQL):
// a listing near a point ordered by distance, without a search or with
// enough matches that walking each point's newest jobs finds them soon.
func walksPoints(f listing, total int) bool {
	return f.Limit > 0 && f.Near != nil && f.Sort == jobbus.SortDistance &&
		(f.Search.Empty() || total >= walkMinTotal) && f.Offset+f.Limit <= walkMaxRows
}

// pointsSQL is listSQL's page by distance without sorting every job in the
// circle: a job's point is its city's, so the points in the circle
// (job_points, every point jobs ever had) are taken by distance and each
// point's offset+limit newest jobs that pass the filters
// (jobs_active_city_idx); sorted together, their first offset+limit are the
// listing's, since every job of a point has that point's distance.
func pointsSQL(f listing) (string, []any) {
	w := &pg.Where{}
	n := f.Near
	inCircle := f
	inCircle.Near = nil // a point's jobs are in the circle when the point is
	with, conds := listConds(w, inCircle, false)
	minLon, minLat, maxLon, maxLat := n.Box()
	lat, lon := w.Arg(n.Lat), w.Arg(n.Lon)
	k := bound(f.Offset + f.Limit)
	points := `p AS MATERIALIZED (SELECT city_slug, lat, lon, great_circle_km(` + lat + `, ` + lon + `, lat, lon) AS d FROM job_points
		WHERE geo <@ box(point(` + w.Arg(minLon) + `, ` + w.Arg(minLat) + `), point(` + w.Arg(maxLon) + `, ` + w.Arg(maxLat) + `))
		AND great_circle_km(` + lat + `, ` + lon + `, lat, lon) <= ` + w.Arg(n.RadiusKm) + `)`
	with = withCTE(with, points)
	// The point compared by its coordinates, not geo (whose GiST index would
	// find every job of the point to sort), and with the filters but the
	// status (which picks the partial index) inside coalesce: as plain
	// conditions the planner takes them to leave a row or two, sees nothing
	// for the LIMIT to save and sorts the whole city instead of walking
	// jobs_active_city_idx (make bench -growth, row b5 at 1 M jobs).
	q := with + `SELECT ` + pointColumns + `, p.d AS distance_km FROM p, LATERAL (SELECT ` + listColumns + ` FROM jobs WHERE ` +
		`city_slug = p.city_slug AND ` + conds[0] + ` AND coalesce(city_lat = p.lat AND city_lon = p.lon AND ` +
		initPlans.Replace(strings.Join(conds[1:], " AND ")) + `, false)` +
		` ORDER BY date_added DESC, id DESC LIMIT ` + k + `) j ORDER BY distance_km, date_added DESC, id DESC LIMIT ` +
		bound(f.Limit) + ` OFFSET ` + bound(f.Offset)
	return q, w.Args()
}

// walkSQL is listSQL's page found the cheap way when it can be: among the
// newest walkScan jobs the filters admit, the matches of the best rank (by
// relevance: the best a match had when the kept plan was counted, TopScore;
// without it the best any job can have, every word in the title in its best
// form some title has: search_plan's top) or all matches (by date), newest
// first.
// When there are offset+limit of them they are the page, since every other
// match ranks below them or is older; otherwise (a one-time filter, so only
// one of the two runs) every match is ranked as listSQL does.
func walkSQL(f listing) (string, []any) {
	// The field queries only for a walk to a kept best rank: the walk to
	// the best possible (topLevel) needs none, and its ranking branch, which
	// runs only when the walk comes back short, ranks with ts_filter rather
	// than make every page parse them (make bench row b1).
	fields := ranksByFields(f) && f.plan.TopScore > 0
	with, from, w := where(f, fields)
	inner := strings.Join(filters(w, f), " AND ") // the same values again, as new parameters
	conds := initPlans.Replace(strings.Join(searchConds(f.Search), " AND "))
	switch p := f.plan; {
	case f.Sort != jobbus.SortRelevance || len(f.Search.Words) == 0:
	case p != nil && p.TopScore > 0:
		// The best rank a match had when counted: no match ranks above it,
		// and one that had it and expired since only makes the walk come
		// back short, never wrong.
		conds += ` AND ` + walkRank(len(f.Search.Words))
	default:
		conds += ` AND ` + walkTopLevel
	}
	k, off := bound(f.Offset+f.Limit), bound(f.Offset)
	full := selectSQL(f, w, from)
	q := withCTE(with, `w AS MATERIALIZED (SELECT `+listColumns+` FROM (SELECT `+listColumns+
		`, search_vector, search_exact FROM jobs WHERE `+inner+` ORDER BY date_added DESC, id DESC LIMIT `+bound(walkScan)+
		`) r WHERE `+conds+` ORDER BY date_added DESC, id DESC LIMIT `+k+`)`) +
		`(SELECT ` + listColumns + ` FROM w WHERE (SELECT count(*) FROM w) = ` + k + ` ORDER BY date_added DESC, id DESC OFFSET ` + off + `)` +
		` UNION ALL (` + full + ` AND (SELECT count(*) FROM w) < ` + k + order(f, fields) + ` LIMIT ` + bound(f.Limit) + ` OFFSET ` + off + `)`
	return q, w.Args()
}
