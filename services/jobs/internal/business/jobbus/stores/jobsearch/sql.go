package jobsearch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// listColumns are a listed job's columns (rows.Scan reads them).

const listColumns = `id, title, company, job_type, tags, is_remote, slug, external_url, apply_url, company_logo,
	date_added, expiration_date, city_name, city_slug, space_name, sal_min, sal_max, currency, salary_period, workplace_type, external_ref`

// pointColumns are listColumns of pointsSQL's jobs j.
var pointColumns = "j." + strings.Join(strings.Split(strings.Join(strings.Fields(listColumns), ""), ","), ", j.")

// searchCTE turns a parsed q into its text-search queries once per
// statement (search_plan, migrations/functions.sql): the row t carries
// the match and the per-word queries the rank reads. With the search's plan
// at hand (kept with the listing's total) t is that plan, as parameters,
// with its top score. With fields, t also holds the field queries the rank
// reads: from the kept plan (fieldQueries: 9 arrays to parse, so only for a
// statement that ranks), or computed by in_fields for the count that keeps
// a plan and its top score.
func searchCTE(w *pg.Where, f listing, fields bool) string {
	s := f.Search
	if p := f.plan; p != nil {
		return `WITH t AS MATERIALIZED (SELECT ` + tsquery(w, p.Match) + ` AS match, ` + tsqueries(w, p.Exact) + ` AS exact, ` +
			tsqueries(w, p.Stem) + ` AS stem, ` + tsqueries(w, p.AnyQ) + ` AS anyq, ` + tsqueries(w, p.Phrase) + ` AS phrase, ` +
			tsquery(w, p.TopExact) + ` AS top_exact, ` + tsquery(w, p.TopForm) + ` AS top_form, ` + w.Arg(p.Walk) + `::boolean AS walk, ` +
			w.Arg(p.TopScore) + `::integer AS top_score` + fieldQueries(w, p, fields) + `) `
	}
	plan := `search_plan(` + w.Arg(nonNil(s.Words)) + `::text[], ` + w.Arg(s.Prefix) + `::boolean[], ` + w.Arg(s.Fuzz) +
		`::integer[], ` + w.Arg(nonNil(s.Phrases)) + `::text[], ` + w.Arg(nonNil(s.Excluded)) + `::text[])`
	if !fields {
		return `WITH t AS MATERIALIZED (SELECT * FROM ` + plan + `) `
	}
	var b strings.Builder
	for _, col := range rankColumns {
		for _, fld := range fieldWeights {
			b.WriteString(`, in_fields(p.` + col + `, '` + strings.ToUpper(fld) + `') AS ` + col + `_` + fld)
		}
	}
	return `WITH t AS MATERIALIZED (SELECT p.*` + b.String() + ` FROM ` + plan + ` p) `
}

// rankColumns are the plan's per-word queries the rank reads, and
// fieldWeights the vectors' weights: title, tags, company. t holds each held to each
// field as col_fld (anyq_a ... stem_c).
var rankColumns, fieldWeights = [...]string{"anyq", "exact", "stem"}, [...]string{"a", "b", "c"}

// fieldQueries are the rank's per-word queries held to one field (weight),
// as the kept plan's extra columns of t: anyq_a ... stem_c (rankSQL). All
// of them travel as one array, written into one buffer, which t slices per
// column, cast once in t's FROM (BenchmarkWalkSQLKept).
func fieldQueries(w *pg.Where, p *Plan, fields bool) string {
	n := len(p.AnyQ)
	if !fields || n == 0 {
		return ""
	}
	cols := [len(rankColumns)][]string{p.AnyQ, p.Exact, p.Stem}
	var buf []byte
	ends := make([]int, 0, len(cols)*len(fieldWeights)*n)
	for _, qs := range cols {
		for _, fld := range fieldWeights {
			for i := range n {
				if i < len(qs) && qs[i] != "" {
					buf = appendWeighted(buf, qs[i], fld[0]-'a'+'A')
				}
				ends = append(ends, len(buf))
			}
		}
	}
	all, queries, start := string(buf), make([]string, len(ends)), 0
	for k, end := range ends {
		queries[k], start = all[start:end], end
	}
	var b strings.Builder
	k := 1
	for _, col := range rankColumns {
		for _, fld := range fieldWeights {
			b.WriteString(`, f.q[` + strconv.Itoa(k) + `:` + strconv.Itoa(k+n-1) + `] AS ` + col + `_` + fld)
			k += n
		}
	}
	return b.String() + ` FROM (SELECT ` + tsqueries(w, queries) + ` AS q) f`
}

// weighted is the tsquery text q with every lexeme held to the weight
// (A-D), as in_title (migrations/functions.sql) writes it for A: 'x' becomes 'x':A,
// 'x':* becomes 'x':*A; a lexeme with weights of its own stays. Lexemes are
// quoted in a tsquery's text, a quote inside doubled.
func weighted(q string, weight byte) string { return string(appendWeighted(nil, q, weight)) }

// appendWeighted appends weighted(q, weight) to b.
func appendWeighted(b []byte, q string, weight byte) []byte {
	for i := 0; i < len(q); {
		if q[i] != '\'' {
			b = append(b, q[i])
			i++
			continue
		}
		j := i + 1 // the closing quote
		for j < len(q) && (q[j] != '\'' || j+1 < len(q) && q[j+1] == '\'') {
			if q[j] == '\'' {
				j++
			}
			j++
		}
		b = append(b, q[i:min(j+1, len(q))]...)
		i = j + 1
		switch {
		case strings.HasPrefix(q[i:], ":*"):
			b = append(b, ':', '*', weight)
			i += 2
		case strings.HasPrefix(q[i:], ":"):
		default:
			b = append(b, ':', weight)
		}
	}
	return b
}

// planColumns read search_plan's row t into a Plan (planDest):
// each query as text, an empty string for none.
const planColumns = `(SELECT coalesce(match::text, '') FROM t), (SELECT exact::text[] FROM t), (SELECT stem::text[] FROM t),
	(SELECT anyq::text[] FROM t), (SELECT phrase::text[] FROM t), (SELECT coalesce(top_exact::text, '') FROM t),
	(SELECT coalesce(top_form::text, '') FROM t), (SELECT walk FROM t)`

func planDest(p *Plan) []any {
	return []any{&p.Match, &p.Exact, &p.Stem, &p.AnyQ, &p.Phrase, &p.TopExact, &p.TopForm, &p.Walk}
}

// tsquery is a query of a plan as a parameter; an empty string is none
// (NULL, as search_plan leaves it), not the empty query (which draws a NOTICE).
func tsquery(w *pg.Where, q string) string { return `nullif(` + w.Arg(q) + `::text, '')::tsquery` }

// tsqueries is a plan's per-word queries as a parameter, empty ones as NULL.
func tsqueries(w *pg.Where, qs []string) string {
	v := make([]*string, len(qs))
	for i := range qs {
		if qs[i] != "" {
			v[i] = &qs[i]
		}
	}
	return w.Arg(v) + `::text[]::tsquery[]`
}

// where builds the filter of a listing; every value is a parameter. With a
// search the statement starts with searchCTE and reads FROM t, jobs; with
// fields t also holds the field queries the rank reads (rank(_, true)).
func where(f listing, fields bool) (with, from string, w *pg.Where) {
	w = &pg.Where{}
	with, conds := listConds(w, f, fields)
	return with, fromWhere(with, conds), w
}

// ranksByFields reports whether f is ordered by relevance with a kept plan,
// whose field queries the rank then reads.
func ranksByFields(f listing) bool {
	return f.plan != nil && f.Sort == jobbus.SortRelevance && len(f.Search.Words) > 0
}

// listConds are a listing's conditions, the second its jobs' expiry, and
// with a search the WITH that starts the statement.
func listConds(w *pg.Where, f listing, fields bool) (with string, conds []string) {
	if !f.Search.Empty() {
		with = searchCTE(w, f, fields)
	}
	conds = filters(w, f)
	if with != "" {
		conds = append(conds[:2:2], append(searchConds(f.Search), conds[2:]...)...)
	}
	return with, conds
}

// fromWhere is the FROM and WHERE of conds.
func fromWhere(with string, conds []string) string {
	if with == "" {
		return ` FROM jobs WHERE ` + strings.Join(conds, " AND ")
	}
	return ` FROM t, jobs WHERE ` + strings.Join(conds, " AND ")
}

// searchConds are q's conditions on a row of jobs (or of a subquery with its
// search columns) beside the row t of searchCTE.
func searchConds(s jobbus.Search) []string {
	conds := []string{`search_vector @@ t.match`}
	// A phrase's words are next to each other in one field: title, tags or
	// company (the fields' positions run on from one another).
	for i := range s.Phrases {
		conds = append(conds, fmt.Sprintf(`(ts_filter(search_exact, '{a}') @@ t.phrase[%[1]d] OR ts_filter(search_exact, '{b}') @@ t.phrase[%[1]d]
				OR ts_filter(search_exact, '{c}') @@ t.phrase[%[1]d])`, i+1))
	}
	return conds
}

// filters are a listing's conditions other than q's, the first two the
// listed jobs' status and expiry; their values are parameters of w.
func filters(w *pg.Where, f listing) []string {
	conds := []string{`status = 'active'`, `expiration_date > now()`}
	if f.JobType != "" {
		conds = append(conds, `job_type = `+w.Arg(f.JobType))
	}
	if f.Remote {
		conds = append(conds, `is_remote`)
	}
	if f.WorkplaceType != "" {
		conds = append(conds, `workplace_type = `+w.Arg(f.WorkplaceType))
	}
	if f.CitySlug != "" {
		conds = append(conds, `city_slug = `+w.Arg(f.CitySlug))
	}
	if f.SpaceID != 0 {
		conds = append(conds, `space_id = `+w.Arg(f.SpaceID))
	}
	if f.Currency != "" {
		conds = append(conds, `currency = `+w.Arg(f.Currency))
	}
	if f.SalaryMin != nil {
		// Annualised (jobbus.PeriodsPerYear), on jobs_active_salary_idx.
		conds = append(conds, `sal_annual >= `+w.Arg(*f.SalaryMin))
	}
	if f.Tag != "" {
		conds = append(conds, `tag_list @> ARRAY[`+w.Arg(f.Tag)+`::text]`)
	}
	if len(f.JobIDs) > 0 {
		conds = append(conds, `id = ANY(`+w.Arg(f.JobIDs)+`)`)
	}
	if !f.PostedSince.IsZero() {
		conds = append(conds, `date_added >= `+w.Arg(f.PostedSince))
	}
	if n := f.Near; n != nil {
		// The box is what jobs_active_geo_idx answers; the distance decides.
		minLon, minLat, maxLon, maxLat := n.Box()
		conds = append(conds, `geo <@ box(point(`+w.Arg(minLon)+`, `+w.Arg(minLat)+`), point(`+w.Arg(maxLon)+`, `+w.Arg(maxLat)+`))`,
			distanceSQL(w.Arg(n.Lat), w.Arg(n.Lon))+` <= `+w.Arg(n.RadiusKm))
	}
	return conds
}

// distanceSQL is the great-circle distance of a job's city to a point.
func distanceSQL(lat, lon string) string {
	return `great_circle_km(` + lat + `, ` + lon + `, city_lat, city_lon)`
}

// nonNil sends an empty array rather than NULL.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// rankSQLs are rankSQL's expressions for up to jobbus.MaxSearchTerms words,
// built once rather than with fmt for every search (BenchmarkListSQL).
// [1] reads the kept plan's field queries.
var rankSQLs = func() (r [2][]string) {
	for k := range r {
		r[k] = make([]string, jobbus.MaxSearchTerms+1)
		for i := range r[k] {
			r[k][i] = rankSQL(i, k == 1)
		}
	}
	return r
}()

func rank(words int, fieldQueries bool) string {
	k := 0
	if fieldQueries {
		k = 1
	}
	if words < len(rankSQLs[k]) {
		return rankSQLs[k][words]
	}
	return rankSQL(words, fieldQueries)
}

// rankSQL scores a row for relevance: per word, where it matches best (title
// above tags above company) and how (exact above stem or prefix above typo);
// the words' scores add up. The field tests run in that order and stop at
// the first field that matches, so most rows split few vectors.
//
// With fieldQueries (a kept plan: searchCTE's anyq_a ... stem_c) a field
// test is the whole vector against the word's query held to the field's
// weight, which is the same test without copying the vector's field out
// (ts_filter) for each (make bench -growth, rows b1-b8 at 1 M jobs).
// TestRelevance compares both.
func rankSQL(words int, fieldQueries bool) string {
	// in: the word's query q of plan column col in field fld of vector vec.
	in := func(vec, col, fld string, i int) string {
		if fieldQueries {
			return fmt.Sprintf(`search_%s @@ t.%s_%s[%d]`, vec, col, fld, i)
		}
		return fmt.Sprintf(`ts_filter(search_%s, '{%s}') @@ t.%s[%d]`, vec, fld, col, i)
	}
	var b strings.Builder
	for i := 1; i <= words; i++ {
		if i > 1 {
			b.WriteString(" + ")
		}
		b.WriteString("CASE")
		for j, fld := range fieldWeights {
			top := 15 - 4*j
			fmt.Fprintf(&b, ` WHEN %s THEN CASE WHEN %s THEN %d WHEN %s THEN %d ELSE %d END`,
				in("vector", "anyq", fld, i), in("exact", "exact", fld, i), top, in("vector", "stem", fld, i), top-1, top-2)
		}
		b.WriteString(" ELSE 0 END")
	}
	return b.String()
}

// listSQL is the SQL of a listing.
func listSQL(f listing) (string, []any) {
	fields := ranksByFields(f)
	with, from, w := where(f, fields)
	q := with + selectSQL(f, w, from) + order(f, fields)
	switch {
	case f.Limit > 0 && !f.Search.Empty() && f.Offset+f.Limit <= walkMaxRows:
		// A search's first pages: planning its rank anew each time cost
		// too much of a rare term's page (see bound).
		q += ` LIMIT ` + bound(f.Limit) + ` OFFSET ` + bound(f.Offset)
	case f.Limit > 0:
		q += ` LIMIT ` + w.Arg(f.Limit) + ` OFFSET ` + w.Arg(f.Offset)
	}
	return q, w.Args()
}

// selectSQL is a listing's SELECT and FROM, without its order.
func selectSQL(f listing, w *pg.Where, from string) string {
	columns := listColumns
	if n := f.Near; n != nil {
		columns += `, ` + distanceSQL(w.Arg(n.Lat), w.Arg(n.Lon)) + ` AS distance_km`
	}
	return `SELECT ` + columns + from
}

// order is a listing's ORDER BY.
func order(f listing, fields bool) string {
	switch {
	case f.Sort == jobbus.SortDistance && f.Near != nil:
		return ` ORDER BY distance_km, date_added DESC, id DESC`
	case f.Sort == jobbus.SortRelevance && len(f.Search.Words) > 0: // phrases alone: newest first
		return ` ORDER BY ` + rank(len(f.Search.Words), fields) + ` DESC, date_added DESC, id DESC`
	}
	return ` ORDER BY date_added DESC, id DESC`
}
