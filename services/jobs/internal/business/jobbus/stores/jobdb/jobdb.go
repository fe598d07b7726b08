// Package jobdb is the PostgreSQL store of the jobs schema.
package jobdb

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// PoolParams are the settings the store's connections need: a common term's
// bitmap must stay exact. At 4 MB (PostgreSQL's default) q=community over
// 1 M jobs went lossy and rechecked 383 k rows (2.1 s); at 16 MB, exact,
// 0.56-0.74 s (docs/search.md).
var PoolParams = map[string]string{"work_mem": "16MB"}

// Store implements jobbus.Storer.
type Store struct {
	pool *pgxpool.Pool
	// db is the pool, or the transaction of a store made by NewWithTx.
	db db
	// reads routes the reads of a store made by ReadsFor (routed): to the
	// replica once it has replayed after, the key's last write.
	reads  *pg.Reads
	routed bool
	after  pg.LSN
	// plans are the plans read in the last minute: every create and update
	// names one, and they change only when an operator edits the table
	// (make bench rows d and e2: one round trip fewer each).
	plans *planCache
}

// db is what a pool and a transaction have in common.
type db interface {
	querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// New returns a store over pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, db: pool, plans: &planCache{m: map[int]cachedPlan{}}}
}

// Begin implements jobbus.Storer.
func (s *Store) Begin(ctx context.Context) (jobbus.Tx, error) {
	tx, err := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	}).Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return tx, nil
}

// NewWithTx implements jobbus.Storer.
func (s *Store) NewWithTx(tx jobbus.Tx) (jobbus.Storer, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok {
		return nil, fmt.Errorf("jobdb: a %T is not a pgx transaction", tx)
	}
	return &Store{pool: s.pool, db: ptx, plans: s.plans}, nil
}

// planTTL is how long a plan read is reused: an operator's edit of the plans
// table reaches every pod within it.
const planTTL = time.Minute

type planCache struct {
	mu sync.Mutex
	m  map[int]cachedPlan
}

type cachedPlan struct {
	p     jobbus.Plan
	found bool
	until time.Time
}

// Plan implements jobbus.Storer.
func (s *Store) Plan(ctx context.Context, id int) (jobbus.Plan, error) {
	now := time.Now()
	s.plans.mu.Lock()
	c, ok := s.plans.m[id]
	s.plans.mu.Unlock()
	if !ok || now.After(c.until) {
		c = cachedPlan{until: now.Add(planTTL), found: true}
		err := s.db.QueryRow(ctx, `SELECT id, name, price, currency, expiration_days, active FROM plans WHERE id = $1`, id).
			Scan(&c.p.ID, &c.p.Name, &c.p.Price, &c.p.Currency, &c.p.ExpirationDays, &c.p.Active)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			c = cachedPlan{until: c.until}
		case err != nil:
			return jobbus.Plan{}, fmt.Errorf("select plan: %w", err)
		}
		s.plans.mu.Lock()
		if _, known := s.plans.m[id]; known || len(s.plans.m) < maxCachedPlans {
			s.plans.m[id] = c
		}
		s.plans.mu.Unlock()
	}
	if !c.found {
		return jobbus.Plan{}, jobbus.ErrNotFound
	}
	return c.p, nil
}

// maxCachedPlans bounds the cache: a client naming ever new id_plan values
// must not grow it.
const maxCachedPlans = 64

// Owe implements jobbus.Storer.
func (s *Store) Owe(ctx context.Context, spaceID int64) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO unannounced (space_id) VALUES ($1) ON CONFLICT DO NOTHING`, spaceID); err != nil {
		return fmt.Errorf("insert unannounced: %w", err)
	}
	return nil
}

// TakeOwed implements jobbus.Storer.
func (s *Store) TakeOwed(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `DELETE FROM unannounced RETURNING space_id`)
	if err != nil {
		return nil, fmt.Errorf("delete unannounced: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("delete unannounced: %w", err)
	}
	return ids, nil
}

// StoredResponse implements jobbus.Storer.
func (s *Store) StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	return storedResponse(ctx, s.db, keyID, key, since)
}

// LockIdempotency implements jobbus.Storer: a transaction-scoped advisory lock.
func (s *Store) LockIdempotency(ctx context.Context, keyID int64, key string) (bool, error) {
	var locked bool
	if err := s.db.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey(keyID, key)).Scan(&locked); err != nil {
		return false, fmt.Errorf("lock idempotency key: %w", err)
	}
	return locked, nil
}

// DeleteIdempotency implements jobbus.Storer.
func (s *Store) DeleteIdempotency(ctx context.Context, keyID int64, key string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2`, keyID, key); err != nil {
		return fmt.Errorf("delete expired idempotency key: %w", err)
	}
	return nil
}

// SaveResponse implements jobbus.Storer.
func (s *Store) SaveResponse(ctx context.Context, idem jobbus.Idempotency, status int, body []byte, jobID int64) error {
	if _, err := s.db.Exec(ctx, `INSERT INTO idempotency_keys (key_id, idem_key, request_hash, response_status, response_body, job_id)
		VALUES ($1, $2, $3, $4, $5, $6)`, idem.KeyID, idem.Key, idem.RequestHash, status, body, jobID); err != nil {
		if pg.IsUniqueViolation(err) {
			return jobbus.ErrInFlight
		}
		return fmt.Errorf("insert idempotency key: %w", err)
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func storedResponse(ctx context.Context, q querier, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	var r jobbus.StoredResponse
	err := q.QueryRow(ctx, `SELECT request_hash, response_status, response_body, created_at, EXISTS (SELECT FROM unannounced)
		FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2 AND created_at > $3`, keyID, key, since).
		Scan(&r.RequestHash, &r.Status, &r.Body, &r.CreatedAt, &r.Owed)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.StoredResponse{}, jobbus.ErrNotFound
	}
	if err != nil {
		return jobbus.StoredResponse{}, fmt.Errorf("select idempotency key: %w", err)
	}
	return r, nil
}

// lockKey maps an (API key, Idempotency-Key) pair to an advisory lock id.
func lockKey(keyID int64, key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write(strconv.AppendInt(nil, keyID, 10))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

const listColumns = `id, title, company, job_type, tags, is_remote, slug, external_url, apply_url, company_logo,
	date_added, expiration_date, city_name, city_slug, space_name, sal_min, sal_max, currency`

// pointColumns are listColumns of pointsSQL's jobs j.
var pointColumns = "j." + strings.Join(strings.Split(strings.Join(strings.Fields(listColumns), ""), ","), ", j.")

// searchCTE turns a parsed q into its text-search queries once per
// statement (search_plan, migrations/00006_search_top.sql): the row t carries
// the match and the per-word queries the rank reads. With the search's plan
// at hand (kept with the listing's total) t is that plan, as parameters,
// with its top score. With fields, t also holds the field queries the rank
// reads: from the kept plan (fieldQueries: 9 arrays to parse, so only for a
// statement that ranks), or computed by in_fields for the count that keeps
// a plan and its top score.
func searchCTE(w *pg.Where, s jobbus.Search, fields bool) string {
	if p := s.Plan; p != nil {
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
// column, cast once in t's FROM (nine arrays cost 110 allocations and 40 µs
// a request).
func fieldQueries(w *pg.Where, p *jobbus.SearchPlan, fields bool) string {
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
// (A-D), as in_title (migration 00006) writes it for A: 'x' becomes 'x':A,
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

// planColumns read search_plan's row t into a jobbus.SearchPlan (planDest):
// each query as text, an empty string for none.
const planColumns = `(SELECT coalesce(match::text, '') FROM t), (SELECT exact::text[] FROM t), (SELECT stem::text[] FROM t),
	(SELECT anyq::text[] FROM t), (SELECT phrase::text[] FROM t), (SELECT coalesce(top_exact::text, '') FROM t),
	(SELECT coalesce(top_form::text, '') FROM t), (SELECT walk FROM t)`

func planDest(p *jobbus.SearchPlan) []any {
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
func where(f jobbus.ListFilter, fields bool) (with, from string, w *pg.Where) {
	w = &pg.Where{}
	with, conds := listConds(w, f, fields)
	return with, fromWhere(with, conds), w
}

// ranksByFields reports whether f is ordered by relevance with a kept plan,
// whose field queries the rank then reads.
func ranksByFields(f jobbus.ListFilter) bool {
	return f.Search.Plan != nil && f.Sort == jobbus.SortRelevance && len(f.Search.Words) > 0
}

// listConds are a listing's conditions, the second its jobs' expiry, and
// with a search the WITH that starts the statement.
func listConds(w *pg.Where, f jobbus.ListFilter, fields bool) (with string, conds []string) {
	if s := f.Search; !s.Empty() {
		with = searchCTE(w, s, fields)
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
func filters(w *pg.Where, f jobbus.ListFilter) []string {
	conds := []string{`status = 'active'`, `expiration_date > now()`}
	if f.JobType != "" {
		conds = append(conds, `job_type = `+w.Arg(f.JobType))
	}
	if f.Remote {
		conds = append(conds, `is_remote`)
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
		conds = append(conds, `coalesce(sal_max, sal_min) >= `+w.Arg(*f.SalaryMin))
	}
	if f.Tag != "" {
		conds = append(conds, `tag_list @> ARRAY[`+w.Arg(f.Tag)+`::text]`)
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
// built once: building one with fmt cost 7-13 µs of every search request.
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
// (ts_filter) for each: a ranked page at 1 M jobs 11-21 % faster
// (docs/benchmarks.md, 2026-11-27 (3)). TestRelevance compares both.
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
func listSQL(f jobbus.ListFilter) (string, []any) {
	fields := ranksByFields(f)
	with, from, w := where(f, fields)
	q := with + selectSQL(f, w, from) + order(f, fields)
	switch {
	case f.Limit > 0 && !f.Search.Empty() && f.Offset+f.Limit <= walkMaxRows:
		// A search's first pages: planning its rank anew each time cost
		// 0.3 of the rare term's 1.6 ms at 1 M jobs (see bound).
		q += ` LIMIT ` + bound(f.Limit) + ` OFFSET ` + bound(f.Offset)
	case f.Limit > 0:
		q += ` LIMIT ` + w.Arg(f.Limit) + ` OFFSET ` + w.Arg(f.Offset)
	}
	return q, w.Args()
}

// selectSQL is a listing's SELECT and FROM, without its order.
func selectSQL(f jobbus.ListFilter, w *pg.Where, from string) string {
	columns := listColumns
	if n := f.Near; n != nil {
		columns += `, ` + distanceSQL(w.Arg(n.Lat), w.Arg(n.Lon)) + ` AS distance_km`
	}
	return `SELECT ` + columns + from
}

// order is a listing's ORDER BY.
func order(f jobbus.ListFilter, fields bool) string {
	switch {
	case f.Sort == jobbus.SortDistance && f.Near != nil:
		return ` ORDER BY distance_km, date_added DESC, id DESC`
	case f.Sort == jobbus.SortRelevance && len(f.Search.Words) > 0: // phrases alone: newest first
		return ` ORDER BY ` + rank(len(f.Search.Words), fields) + ` DESC, date_added DESC, id DESC`
	}
	return ` ORDER BY date_added DESC, id DESC`
}

// rows reads listColumns, and distance_km when the listing is near a point.
type rows struct {
	pgx.Rows
	near bool
}

func (r rows) Scan(j *jobbus.Job) error {
	dst := []any{&j.ID, &j.Title, &j.Company, &j.JobType, &j.Tags, &j.IsRemote, &j.Slug, &j.ExternalURL,
		&j.ApplyURL, &j.CompanyLogo, &j.DateAdded, &j.ExpirationDate, &j.CityName, &j.CitySlug, &j.SpaceName,
		&j.SalMin, &j.SalMax, &j.Currency}
	if r.near {
		dst = append(dst, &j.DistanceKm)
	}
	return r.Rows.Scan(dst...)
}

// List implements jobbus.Storer.
func (s *Store) List(ctx context.Context, f jobbus.ListFilter) (jobbus.JobRows, error) {
	q, args := listSQL(f)
	var r pgx.Rows
	err := s.read(ctx, func(db db) error {
		qr, err := db.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		// A server's error comes with the first row: read it here, where
		// a replica's failure can still send the listing to the primary.
		p := &peeked{Rows: qr, first: qr.Next()}
		if !p.first && qr.Err() != nil {
			qr.Close()
			return qr.Err()
		}
		r = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return rows{r, f.Near != nil}, nil
}

// peeked is rows whose first row List has read already.
type peeked struct {
	pgx.Rows
	first, read bool
}

func (p *peeked) Next() bool {
	if !p.read {
		p.read = true
		return p.first
	}
	return p.Rows.Next()
}

// countSQL is the SQL of a listing's total.
func countSQL(f jobbus.ListFilter) (string, []any) {
	with, from, w := where(f, false)
	return with + `SELECT count(*)` + from, w.Args()
}

// Page implements jobbus.Storer: the count and the page in one round trip.
func (s *Store) Page(ctx context.Context, f jobbus.ListFilter) (jobs []jobbus.Job, total int, err error) {
	err = s.read(ctx, func(db db) (err error) {
		jobs, total, err = page(ctx, db, f)
		return err
	})
	return jobs, total, err
}

// The first page of a search with many matches is looked for among the
// newest walkScan active jobs the other filters admit (walkSQL) before every
// match is ranked: at 1 M jobs, q=community's first page took 0.6 ms that way
// against seconds for ranking its 168 k matches (docs/search.md).
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
// looks costlier than a custom one: at 1 M jobs that planning was half of
// q=community's page (1.05 ms a page, 0.41 with the generic plan PostgreSQL
// takes after five executions once the values are in the text). The walks'
// values are bounded (walkMaxRows), so the statements stay few.
func bound(n int) string { return strconv.Itoa(n) }

// walks reports whether f's page may be looked for by walkSQL first: a
// search ordered by relevance or by date, not by distance.
func walks(f jobbus.ListFilter, total int) bool {
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

// walkRanks are walkRank's conditions, built once (the rank's InitPlans
// made it 40 µs of string work per request).
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
// InitPlan of its own, a scalar: subscripting an array InitPlan for every
// walked row cost the common term's page 70 µs of its 510.
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
func walksPoints(f jobbus.ListFilter, total int) bool {
	return f.Limit > 0 && f.Near != nil && f.Sort == jobbus.SortDistance &&
		(f.Search.Empty() || total >= walkMinTotal) && f.Offset+f.Limit <= walkMaxRows
}

// pointsSQL is listSQL's page by distance without sorting every job in the
// circle: a job's point is its city's, so the points in the circle
// (job_points, every point jobs ever had) are taken by distance and each
// point's offset+limit newest jobs that pass the filters
// (jobs_active_city_idx); sorted together, their first offset+limit are the
// listing's, since every job of a point has that point's distance.
func pointsSQL(f jobbus.ListFilter) (string, []any) {
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
	// for the LIMIT to save and sorts the whole city (24 ms for 14.5 k jobs
	// at 1 M, against 0.3 ms walking jobs_active_city_idx).
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
func walkSQL(f jobbus.ListFilter) (string, []any) {
	// The field queries only for a walk to a kept best rank: the walk to
	// the best possible (topLevel) needs none, and its ranking branch, which
	// runs only when the walk comes back short, ranks with ts_filter rather
	// than make every page parse them (common term: 480 -> 390 µs at 1 M).
	fields := ranksByFields(f) && f.Search.Plan.TopScore > 0
	with, from, w := where(f, fields)
	inner := strings.Join(filters(w, f), " AND ") // the same values again, as new parameters
	conds := initPlans.Replace(strings.Join(searchConds(f.Search), " AND "))
	switch p := f.Search.Plan; {
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

func page(ctx context.Context, db db, f jobbus.ListFilter) ([]jobbus.Job, int, error) {
	if walks(f, math.MaxInt) && f.Search.Plan == nil {
		// Counted with its plan and best rank, as a kept total is: the walk
		// then looks for the rank matches have, not the best possible one
		// (a word only tags hold: 1.9 s ranked, 0.35 ms walked at 1 M jobs).
		t, err := count(ctx, db, f)
		if err != nil {
			return nil, 0, err
		}
		f.Search.Plan = t.Plan
		jobs, err := pageOf(ctx, db, f, t.N)
		return jobs, t.N, err
	}
	cq, cargs := countSQL(f)
	var total int
	if walks(f, math.MaxInt) || walksPoints(f, math.MaxInt) {
		// A page that may be walked: the count says whether it is worth it.
		if err := db.QueryRow(ctx, cq, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count jobs: %w", err)
		}
		jobs, err := pageOf(ctx, db, f, total)
		return jobs, total, err
	}
	// One round trip: the count and the page in a batch.
	q, args := listSQL(f)
	batch := &pgx.Batch{}
	batch.Queue(cq, cargs...)
	batch.Queue(q, args...)
	br := db.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count jobs: %w", err)
	}
	r, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("page jobs: %w", err)
	}
	jobs, err := scanPage(r, f)
	return jobs, total, err
}

// PageOf implements jobbus.Storer: the page of a listing whose total is
// known (counted, or memoised by the business layer).
func (s *Store) PageOf(ctx context.Context, f jobbus.ListFilter, total int) (jobs []jobbus.Job, err error) {
	err = s.read(ctx, func(db db) (err error) {
		jobs, err = pageOf(ctx, db, f, total)
		return err
	})
	return jobs, err
}

func pageOf(ctx context.Context, db db, f jobbus.ListFilter, total int) ([]jobbus.Job, error) {
	q, args := listSQL(f)
	switch {
	case walks(f, total):
		q, args = walkSQL(f)
	case walksPoints(f, total):
		q, args = pointsSQL(f)
	}
	r, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("page jobs: %w", err)
	}
	return scanPage(r, f)
}

func scanPage(r pgx.Rows, f jobbus.ListFilter) ([]jobbus.Job, error) {
	defer r.Close()
	jobs := make([]jobbus.Job, 0, f.Limit)
	for r.Next() {
		var j jobbus.Job
		if err := (rows{r, f.Near != nil}).Scan(&j); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("page jobs: %w", err)
	}
	return jobs, nil
}

// Count implements jobbus.Storer: the listing's total, counted on the
// primary (a replica may not have replayed every write before the versions
// the business layer keeps the total under), with when it was counted, when
// the first counted job expires and the search's plan it was counted with.
func (s *Store) Count(ctx context.Context, f jobbus.ListFilter) (jobbus.Total, error) {
	return count(ctx, s.db, f)
}

func count(ctx context.Context, db db, f jobbus.ListFilter) (jobbus.Total, error) {
	planned := !f.Search.Empty() && f.Search.Plan == nil
	// With the plan, the best rank any match has (TopScore): every match is
	// read for the count already, and the rank adds 0-20 % to it (1 M jobs:
	// "coffee" 376 -> 429-451 ms) where a page whose best rank is not the
	// best possible would otherwise rank every match (1.9 s; walkSQL).
	scored := planned && len(f.Search.Words) > 0
	with, from, w := where(f, scored)
	var t jobbus.Total
	var until *time.Time
	var top *int32
	var best *bool
	columns, dest := `count(*), now(), min(expiration_date)`, []any{&t.N, &t.At, &until}
	if planned {
		t.Plan = &jobbus.SearchPlan{}
		columns, dest = columns+`, `+planColumns, append(dest, planDest(t.Plan)...)
	} else {
		t.Plan = f.Search.Plan
	}
	if scored {
		columns, dest = columns+`, max(`+rank(len(f.Search.Words), true)+`), bool_or(`+topLevel+`)`, append(dest, &top, &best)
	}
	if err := db.QueryRow(ctx, with+`SELECT `+columns+from, w.Args()...).Scan(dest...); err != nil {
		return t, fmt.Errorf("count jobs: %w", err)
	}
	if until != nil {
		t.Until = *until
	}
	// When a match has the best possible rank, the walk keeps to
	// topLevel's two tests a row instead of the rank's (TopScore 0): the
	// common term's page 480 -> 390 µs at 1 M jobs.
	if top != nil && (best == nil || !*best) {
		t.Plan.TopScore = int(*top)
	}
	return t, nil
}

// Expired implements jobbus.Storer: how many of the jobs a total counted at
// since have expired by now (jobs_active_expiry_idx finds them).
func (s *Store) Expired(ctx context.Context, f jobbus.ListFilter, since time.Time) (n int, err error) {
	w := &pg.Where{}
	with, conds := listConds(w, f, false)
	conds[1] = `expiration_date > ` + w.Arg(since) + ` AND expiration_date <= now()`
	q := with + `SELECT count(*)` + fromWhere(with, conds)
	err = s.read(ctx, func(db db) error { return db.QueryRow(ctx, q, w.Args()...).Scan(&n) })
	if err != nil {
		return 0, fmt.Errorf("count expired jobs: %w", err)
	}
	return n, nil
}

// CountKey implements jobbus.Storer: the count's statement and arguments,
// hashed, name a total.
func (s *Store) CountKey(f jobbus.ListFilter) string {
	f.Search.Plan = nil // a plan is what the named total was counted with, not part of its name
	q, args := countSQL(f)
	h := fnv.New128a()
	_, _ = h.Write([]byte(q))
	b := make([]byte, 0, 256)
	for _, a := range args {
		b = appendKeyArg(append(b[:0], 0), a)
		_, _ = h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendKeyArg writes a statement argument for CountKey, its type first
// (1 and "1" must name different totals); the argument types listings send
// without fmt's reflection, which cost 4-8 µs a request, anything else with it.
func appendKeyArg(b []byte, a any) []byte {
	switch v := a.(type) {
	case string:
		return append(append(b, 's'), v...)
	case int:
		return strconv.AppendInt(append(b, 'i'), int64(v), 10)
	case int64:
		return strconv.AppendInt(append(b, 'I'), v, 10)
	case float64:
		return strconv.AppendFloat(append(b, 'f'), v, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(append(b, 'b'), v)
	case []string:
		b = append(b, 'S')
		for _, e := range v {
			b = append(strconv.AppendInt(append(b, ','), int64(len(e)), 10), ':')
			b = append(b, e...)
		}
		return b
	case []bool:
		b = append(b, 'B')
		for _, e := range v {
			b = strconv.AppendBool(append(b, ','), e)
		}
		return b
	case []int:
		b = append(b, 'N')
		for _, e := range v {
			b = strconv.AppendInt(append(b, ','), int64(e), 10)
		}
		return b
	}
	return fmt.Appendf(b, "%T:%v", a, a)
}

// Feed implements jobbus.Storer.
func (s *Store) Feed(ctx context.Context, limit int) (jobs []jobbus.Job, err error) {
	err = s.read(ctx, func(db db) (err error) {
		jobs, err = feed(ctx, db, limit)
		return err
	})
	return jobs, err
}

func feed(ctx context.Context, db db, limit int) ([]jobbus.Job, error) {
	r, err := db.Query(ctx, `SELECT `+listColumns+`, description FROM jobs
		WHERE status = 'active' AND expiration_date > now() ORDER BY date_added DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("feed jobs: %w", err)
	}
	defer r.Close()
	jobs := make([]jobbus.Job, 0, limit)
	for r.Next() {
		var j jobbus.Job
		if err := r.Scan(&j.ID, &j.Title, &j.Company, &j.JobType, &j.Tags, &j.IsRemote, &j.Slug, &j.ExternalURL,
			&j.ApplyURL, &j.CompanyLogo, &j.DateAdded, &j.ExpirationDate, &j.CityName, &j.CitySlug, &j.SpaceName,
			&j.SalMin, &j.SalMax, &j.Currency, &j.Description); err != nil {
			return nil, fmt.Errorf("scan feed job: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("feed jobs: %w", err)
	}
	return jobs, nil
}

// WithReads returns a store whose ReadsFor routes reads through reads
// (the replica of DATABASE_READ_URL, when there is one).
func (s *Store) WithReads(reads *pg.Reads) *Store {
	c := *s
	c.reads = reads
	return &c
}

// ReadsFor implements jobbus.Storer: without a replica, s itself.
func (s *Store) ReadsFor(ctx context.Context, keyID int64) (jobbus.Storer, error) {
	if s.reads == nil || !s.reads.Replica() {
		return s, nil
	}
	c := *s
	c.routed = true
	if keyID == 0 {
		return &c, nil
	}
	// The marker is read on the primary: whichever pod took the key's
	// write, its position is here once the write was answered.
	err := s.pool.QueryRow(ctx, `SELECT lsn FROM read_after WHERE key_id = $1`, keyID).Scan(&c.after)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("select read_after: %w", err)
	}
	return &c, nil
}

// MarkWritten implements jobbus.Storer: after the write's commit, so the
// insert position is past its commit record. Nothing without a replica.
func (s *Store) MarkWritten(ctx context.Context, keyID int64) error {
	if s.reads == nil || !s.reads.Replica() || keyID == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO read_after (key_id, lsn) VALUES ($1, `+pg.LSNSQL(`pg_current_wal_insert_lsn()`)+`)
		ON CONFLICT (key_id) DO UPDATE SET lsn = EXCLUDED.lsn`, keyID); err != nil {
		return fmt.Errorf("upsert read_after: %w", err)
	}
	return nil
}

// read runs fn on the store's db, or for a store made by ReadsFor where
// its reads may go.
func (s *Store) read(ctx context.Context, fn func(db) error) error {
	if !s.routed {
		return fn(s.db)
	}
	return s.reads.Read(ctx, s.after, func(p *pgxpool.Pool) error { return fn(p) })
}
