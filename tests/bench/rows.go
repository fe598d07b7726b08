package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// dataset is what the rows ask for, picked from the generated data once.
type dataset struct {
	Jobs, ActiveJobs int
	// ListCities are 16 cities across the size distribution, for row (a).
	ListCities []string
	// StreamCity has the active job count nearest to 500, for row (c).
	StreamCity        string
	StreamCityMatches int
	CommonTerm        string
	CommonMatches     int
	RareTerm          string
	RareMatches       int
	CityID            int64 // a confirmed city to post jobs to
	CitySearches      []string
	// JobIDs are 64 active jobs spread over the data, for row (h).
	JobIDs []int64
	// The other searches of issue 18: a typo of the common term, a prefix
	// of it (the last word as it is being typed), the jobs within
	// geoRadiusKm of the city with the most active jobs, and a salary
	// filter (salaryMin in salaryCurrency).
	TypoTerm, PrefixTerm       string
	TypoMatches, PrefixMatches int
	// A word only tags hold, and two words no title holds together: their
	// best matches are not the best rank a match could have (issue 18).
	TagTerm, PairTerm         string
	TagMatches, PairMatches   int
	GeoCity                   string
	GeoLat, GeoLon            float64
	GeoMatches, SalaryMatches int
}

var jobTypes = []string{"fulltime", "parttime", "freelance", "internship"}

// The geo and salary rows' filters (b5, b6).
const (
	geoRadiusKm    = 50
	salaryMin      = 50000
	salaryCurrency = "EUR"
)

func (b *bench) pickData(ctx context.Context) (dataset, error) {
	var d dataset
	err := b.data.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'active' AND expiration_date > now()) FROM jobs.jobs`).
		Scan(&d.Jobs, &d.ActiveJobs)
	if err != nil {
		return d, err
	}
	rows, err := b.data.Query(ctx, `SELECT city_slug, count(*) FROM jobs.jobs
		WHERE status = 'active' AND expiration_date > now() GROUP BY city_slug ORDER BY count(*) DESC, city_slug`)
	if err != nil {
		return d, err
	}
	type cityCount struct {
		slug string
		n    int
	}
	var counts []cityCount
	for rows.Next() {
		var c cityCount
		if err := rows.Scan(&c.slug, &c.n); err != nil {
			return d, err
		}
		counts = append(counts, c)
	}
	if err := rows.Err(); err != nil {
		return d, err
	}
	if len(counts) < 16 {
		return d, fmt.Errorf("only %d cities have jobs", len(counts))
	}
	for i := range 16 {
		d.ListCities = append(d.ListCities, counts[i*len(counts)/16].slug)
	}
	best := counts[0]
	for _, c := range counts {
		if abs(c.n-500) < abs(best.n-500) {
			best = c
		}
	}
	d.StreamCity, d.StreamCityMatches = best.slug, best.n

	// A common word of titles and tags, and a company name that only a few
	// jobs carry (the generator numbers companies that are no space).
	d.CommonTerm = "community"
	if err := b.data.QueryRow(ctx, `SELECT lower(company) FROM jobs.jobs WHERE space_id = 0 AND status = 'active'
		ORDER BY id LIMIT 1`).Scan(&d.RareTerm); err != nil {
		return d, fmt.Errorf("rare term: %w", err)
	}
	d.TypoTerm, d.PrefixTerm = "comunity", "communi"
	d.TagTerm, d.PairTerm = "coffee", "event manager" // jobs-seed's tags; its titles "Events Coordinator" and "… Manager"
	// Around the city with the most active jobs: a circle clients ask for,
	// not an empty one.
	d.GeoCity = counts[0].slug
	if err := b.data.QueryRow(ctx, `SELECT city_lat, city_lon FROM jobs.jobs WHERE city_slug = $1 AND city_lat IS NOT NULL
		AND city_lon IS NOT NULL LIMIT 1`, d.GeoCity).Scan(&d.GeoLat, &d.GeoLon); err != nil {
		return d, fmt.Errorf("coordinates of %s: %w", d.GeoCity, err)
	}
	if err := b.countMatches(ctx, &d); err != nil {
		return d, err
	}
	// The write rows post tens of thousands of jobs: to a city no read row
	// lists, or the rows after them would measure a city grown a hundredfold
	// (it did: one of row a's 16 queries took 50 ms after row d, and the
	// constant-rate p99 was that query's time).
	if err := b.data.QueryRow(ctx, `SELECT id FROM directory.cities WHERE confirmed AND slug <> ALL($1)
		ORDER BY id LIMIT 1`, append([]string{d.StreamCity}, d.ListCities...)).Scan(&d.CityID); err != nil {
		return d, fmt.Errorf("city to post to: %w", err)
	}
	d.CitySearches = []string{"ber", "mar", "san", "por", "vel", "nova", "heim", "burg"}
	// Ordered by a hash of the id: spread over the whole table, the same
	// jobs in every run of the same data.
	rows, err = b.data.Query(ctx, `SELECT id FROM jobs.jobs WHERE status = 'active' AND expiration_date > now()
		ORDER BY md5(id::text) LIMIT 64`)
	if err != nil {
		return d, err
	}
	if d.JobIDs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return d, fmt.Errorf("jobs of row h: %w", err)
	}
	if len(d.JobIDs) < 64 {
		return d, fmt.Errorf("only %d active jobs", len(d.JobIDs))
	}
	return d, nil
}

// countMatches counts what each search row finds in the data as it is now
// (the queries stay; -growth reseeds under them).
func (b *bench) countMatches(ctx context.Context, d *dataset) error {
	for _, m := range []struct {
		term string
		n    *int
	}{{d.CommonTerm, &d.CommonMatches}, {d.RareTerm, &d.RareMatches}, {d.TypoTerm, &d.TypoMatches}, {d.PrefixTerm, &d.PrefixMatches},
		{d.TagTerm, &d.TagMatches}, {d.PairTerm, &d.PairMatches}} {
		var err error
		if *m.n, err = b.matches(ctx, m.term); err != nil {
			return fmt.Errorf("matches of %q: %w", m.term, err)
		}
	}
	var err error
	if d.GeoMatches, err = b.countActive(ctx, "jobs", "great_circle_km($1, $2, city_lat, city_lon) <= $3", d.GeoLat, d.GeoLon, geoRadiusKm); err != nil {
		return fmt.Errorf("geo matches: %w", err)
	}
	if d.SalaryMatches, err = b.countActive(ctx, "jobs", "currency = $1 AND coalesce(sal_max, sal_min) >= $2", salaryCurrency, salaryMin); err != nil {
		return fmt.Errorf("salary matches: %w", err)
	}
	return nil
}

// matches counts what GET /v2/jobs?q=term finds: its words as the jobs
// service parses them (jobbus.ParseSearch: the last one a prefix, typos by
// length) through the same search_plan.
func (b *bench) matches(ctx context.Context, term string) (int, error) {
	words := strings.FieldsFunc(strings.ToLower(term), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	prefix, fuzz := make([]bool, len(words)), make([]int, len(words))
	for i, w := range words {
		prefix[i] = i == len(words)-1
		switch n := utf8.RuneCountInString(w); {
		case n >= 9:
			fuzz[i] = 2
		case n >= 5:
			fuzz[i] = 1
		}
	}
	return b.countActive(ctx, `search_plan($1::text[], $2::boolean[], $3::integer[], '{}', '{}') t, jobs`,
		"search_vector @@ t.match", words, prefix, fuzz)
}

// countActive counts the active jobs of from that cond selects, with the
// listing's filter written as the jobs service writes it (jobdb's where).
func (b *bench) countActive(ctx context.Context, from, cond string, args ...any) (int, error) {
	// search_plan and great_circle_km call their helpers unqualified: they
	// run in the jobs schema, as the service's connections do.
	tx, err := b.data.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }() // read only: nothing to keep
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = jobs`); err != nil {
		return 0, err
	}
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM `+from+` WHERE status = 'active' AND expiration_date > now() AND `+cond, args...).Scan(&n)
	return n, err
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// row is one line of the report: what is sent through the gateway, and
// what it is compared with.
type row struct {
	ID, Name string
	Backend  string // the service behind the gateway that answers it
	Load     load
	// Direct sends the same requests to the backend itself, with a signed
	// identity instead of a key.
	Direct bool
	// SQL is the statements the backend runs for each request variant, run
	// by pgbench as the database ceiling (nil: none).
	SQL [][]statement
	// Setup runs once before the row (say, creating what replays replay).
	Setup func(ctx context.Context, base string, l load) error
	// Of is, for a row of the cached phase, the row (cache off) whose
	// requests it sends and whose figures it is compared with.
	Of string
}

func (b *bench) keyHeaders() map[string]string {
	return map[string]string{"X-API-Key": b.key}
}

// listRows are the paginated reads: (a), and the searches of (b): b1 a
// common term, b2 a rare one, b3 a typo of the common term, b4 a prefix of
// it, b5 a circle around a city, b6 a salary filter, b7 a word only tags
// hold, b8 two words no title holds together.
func (b *bench) listRows(ctx context.Context, d dataset) ([]row, error) {
	a := row{ID: "a", Name: "GET /v2/jobs?city&job_type, paginated", Backend: "jobs", Direct: true,
		Load: load{Method: "GET", Headers: b.keyHeaders()}}
	for i, city := range d.ListCities {
		jt := jobTypes[i%len(jobTypes)]
		a.Load.Requests = append(a.Load.Requests, request{Path: "/v2/jobs?city=" + city + "&job_type=" + jt + "&page=1&per_page=20"})
		sts, err := b.listStatements(ctx, "-city", city, "-job-type", jt, "-limit", "20")
		if err != nil {
			return nil, err
		}
		a.SQL = append(a.SQL, sts)
	}
	rows := []row{a}
	for _, s := range searchRows(d) {
		r := row{ID: s.id, Name: fmt.Sprintf("GET /v2/jobs?%s (%s, %d matches), paginated", s.query, s.what, s.n), Backend: "jobs", Direct: true,
			Load: load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: "/v2/jobs?" + s.query + "&page=1&per_page=20"}}}}
		sts, err := b.listStatements(ctx, append(s.args, "-limit", "20")...)
		if err != nil {
			return nil, err
		}
		r.SQL = [][]statement{sts}
		rows = append(rows, r)
	}
	return rows, nil
}

// search is one of (b)'s paginated searches: as the URL carries it, and the
// same filter as jobs-seed list-sql takes it.
type search struct {
	id, what string
	n        int
	query    string
	args     []string
}

// searchRows are (b)'s searches over the data set d.
func searchRows(d dataset) []search {
	term := func(id, what, t string, n int) search {
		return search{id, what, n, "q=" + url.QueryEscape(t), []string{"-q", t}}
	}
	// The same text in the URL and for list-sql, so that both parse the
	// same float.
	near := strconv.FormatFloat(d.GeoLat, 'f', -1, 64) + "," + strconv.FormatFloat(d.GeoLon, 'f', -1, 64)
	radius, salary := strconv.Itoa(geoRadiusKm), strconv.Itoa(salaryMin)
	return []search{
		term("b1", "common", d.CommonTerm, d.CommonMatches),
		term("b2", "rare", d.RareTerm, d.RareMatches),
		term("b3", "typo of "+d.CommonTerm, d.TypoTerm, d.TypoMatches),
		term("b4", "prefix of "+d.CommonTerm, d.PrefixTerm, d.PrefixMatches),
		{"b5", "geo: around " + d.GeoCity, d.GeoMatches, "near=" + near + "&radius_km=" + radius, []string{"-near", near, "-radius", radius}},
		{"b6", "salary", d.SalaryMatches, "salary_min=" + salary + "&currency=" + salaryCurrency,
			[]string{"-salary-min", salary, "-currency", salaryCurrency}},
		term("b7", "only in tags", d.TagTerm, d.TagMatches),
		term("b8", "no title has both", d.PairTerm, d.PairMatches),
	}
}

// streamRow is (c): the default, unpaginated list of one city.
func (b *bench) streamRow(ctx context.Context, d dataset, matches int) (row, error) {
	r := row{ID: "c", Name: fmt.Sprintf("GET /v2/jobs?city (%d matches), unpaginated stream", matches), Backend: "jobs", Direct: true,
		Load: load{Method: "GET", Headers: b.keyHeaders(), Requests: []request{{Path: "/v2/jobs?city=" + d.StreamCity}}}}
	sts, err := b.listStatements(ctx, "-city", d.StreamCity)
	r.SQL = [][]statement{sts}
	return r, err
}

// jobBody is a valid create request; %s is replaced to make it unique.
func jobBody(cityID int64, token string) string {
	return fmt.Sprintf(`{"title":"Bench community host %s","company":"Bench Coworking","description":"<p>Welcome members, run events and keep the desk. Ref %s.</p><ul><li>Community</li><li>Events</li></ul>","job_type":"fulltime","tags":"Community, events ,hospitality,community","id_city":%d,"external_url":"https://jobs.bench.example/%s","is_remote":0,"sal_min":30000,"sal_max":42000}`,
		token, token, cityID, token)
}

// writeRows are (d) unique creates, (e1) replays of an Idempotency-Key and
// (e2) duplicates matched by fingerprint.
func (b *bench) writeRows(d dataset) []row {
	jobsHeaders := func() map[string]string {
		h := b.keyHeaders()
		h["Content-Type"] = "application/json"
		return h
	}
	dRow := row{ID: "d", Name: "POST /v2/jobs, unique bodies", Backend: "jobs", Direct: true,
		Load: load{Method: "POST", Headers: jobsHeaders(), Unique: true,
			Requests: []request{{Path: "/v2/jobs", Body: jobBody(d.CityID, "%s")}}}}
	// 64 keys and 64 jobs, each created once in Setup, then sent again and again.
	e1 := row{ID: "e1", Name: "POST /v2/jobs, replayed Idempotency-Key", Backend: "jobs", Direct: true,
		Load: load{Method: "POST", Headers: jobsHeaders()}}
	e2 := row{ID: "e2", Name: "POST /v2/jobs, duplicate (fingerprint match)", Backend: "jobs", Direct: true,
		Load: load{Method: "POST", Headers: jobsHeaders()}}
	run := strconv.FormatInt(int64(b.seqNext()), 10)
	for i := range 64 {
		e1.Load.Requests = append(e1.Load.Requests, request{Path: "/v2/jobs", Body: jobBody(d.CityID, "replay-"+run+"-"+strconv.Itoa(i)),
			Header: map[string]string{"Idempotency-Key": "bench-replay-" + run + "-" + strconv.Itoa(i)}})
		e2.Load.Requests = append(e2.Load.Requests, request{Path: "/v2/jobs", Body: jobBody(d.CityID, "dup-"+run+"-"+strconv.Itoa(i))})
	}
	once := func(ctx context.Context, base string, l load) error {
		for i := range l.Requests {
			if _, err := b.probe(ctx, base, l, i); err != nil {
				return err
			}
		}
		return nil
	}
	e1.Setup, e2.Setup = once, once
	return []row{dRow, e1, e2}
}

func (b *bench) seqNext() int {
	b.seq++
	return b.seq
}

// readRows are (f) the city search of the directory, (g) the public jobs
// feed and (h) single jobs.
func (b *bench) readRows(d dataset) []row {
	f := row{ID: "f", Name: "GET /v2/cities?search=", Backend: "directory", Direct: true,
		Load: load{Method: "GET", Headers: b.keyHeaders()}}
	for _, s := range d.CitySearches {
		f.Load.Requests = append(f.Load.Requests, request{Path: "/v2/cities?search=" + s})
	}
	g := row{ID: "g", Name: "GET /v2/vine/jobs (public feed)", Backend: "jobs", Direct: true,
		Load: load{Method: "GET", Requests: []request{{Path: "/v2/vine/jobs"}}}}
	h := row{ID: "h", Name: fmt.Sprintf("GET /v2/jobs/{id} over %d active jobs", len(d.JobIDs)), Backend: "jobs", Direct: true,
		Load: load{Method: "GET", Headers: b.keyHeaders()}}
	for _, id := range d.JobIDs {
		h.Load.Requests = append(h.Load.Requests, request{Path: "/v2/jobs/" + strconv.FormatInt(id, 10)})
	}
	return []row{f, g, h}
}

// cachedRows are the rows of the cached phase, measured through the
// gateway with its response cache on: (a$) row a's requests again and
// again, answered from the cache; (h$) the same for row h; (n) row a's
// requests with If-None-Match of their ETag, answered 304; (am) row a's
// requests made unique by a parameter the jobs service ignores, each one a
// miss that is forwarded and stored. am comes last: its thousands of
// entries would otherwise push the others' out of the cache.
func (b *bench) cachedRows(a, h, b1 row) []row {
	aHit := row{ID: "a$", Name: "row a again and again (cache hits)", Backend: "jobs", Of: "a", Load: a.Load}
	hHit := row{ID: "h$", Name: "row h again and again (cache hits)", Backend: "jobs", Of: "h", Load: h.Load}
	n := row{ID: "n", Name: "row a with If-None-Match of each request's ETag (304)", Backend: "jobs", Of: "a",
		Load: load{Method: "GET", Headers: a.Load.Headers, Requests: slices.Clone(a.Load.Requests)}}
	// Setup fetches each request's ETag and checks that the conditional
	// request is answered 304; it sets If-None-Match on the row's own
	// requests (l shares their array).
	n.Setup = func(ctx context.Context, base string, l load) error {
		for i, r := range l.Requests {
			resp, raw, err := b.send(ctx, base, l, i)
			if err != nil {
				return err
			}
			etag := resp.Header.Get("ETag")
			if resp.StatusCode != http.StatusOK || etag == "" {
				return fmt.Errorf("GET %s: %d, ETag %q (is the response cache on?): %.300s", r.Path, resp.StatusCode, etag, raw)
			}
			l.Requests[i].Header = map[string]string{"If-None-Match": etag}
			if resp, raw, err = b.send(ctx, base, l, i); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusNotModified {
				return fmt.Errorf("GET %s with If-None-Match %s: %d, not 304: %.300s", r.Path, etag, resp.StatusCode, raw)
			}
		}
		return nil
	}
	miss := row{ID: "am", Name: "row a, each request made unique by an ignored parameter (cache misses)", Backend: "jobs", Of: "a",
		Load: load{Method: "GET", Headers: a.Load.Headers, Unique: true}}
	for _, r := range a.Load.Requests {
		miss.Load.Requests = append(miss.Load.Requests, request{Path: r.Path + "&bench_miss=%s"})
	}
	// The common term of issue 18 with its exact total, as a job board
	// serves it: the same search again and again between writes.
	b1Hit := row{ID: "b1$", Name: "row b1 again and again (cache hits)", Backend: "jobs", Of: "b1", Load: b1.Load}
	return []row{aHit, hHit, n, miss, b1Hit}
}

// rowGroups are names -rows takes for several rows: cache is the cached
// phase with the rows its figures are compared with (a and its pgbench, h,
// the hello-world ceiling).
var rowGroups = map[string][]string{"cache": {"a$", "am", "h$", "n", "c$", "b1$", "a", "h", "c", "b1", "hello"}}

func (c config) wants(id string) bool {
	if c.Rows == nil || c.Rows[id] || c.Rows[strings.TrimRight(id, "0123456789")] {
		return true
	}
	for g, ids := range rowGroups {
		if c.Rows[g] && slices.Contains(ids, id) {
			return true
		}
	}
	return false
}
