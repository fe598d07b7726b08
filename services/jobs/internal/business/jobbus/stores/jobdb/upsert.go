package jobdb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// insertedColumns are what a new job is written with, each as the value it
// takes from the statement's parameters (upsertArgs). The casts name each
// parameter's type once, for the INSERT's SELECT and the match's comparison.
var insertedColumns = []struct{ name, value string }{
	{"hash_identifier", "$1::text"}, {"space_id", "$2::bigint"}, {"space_name", "$3::text"}, {"key_id", "$4::bigint"},
	{"fingerprint", "$5::text"}, {"title", "$6::text"}, {"company", "$7::text"}, {"description", "$8::text"},
	{"job_type", "$9::text"}, {"tags", "$10::text"}, {"is_remote", "$11::boolean"}, {"slug", "$12::text"},
	{"external_url", "$13::text"}, {"apply_url", "$14::text"}, {"city_id", "$15::bigint"}, {"city_name", "$16::text"},
	{"city_slug", "$17::text"}, {"sal_min", "$18::bigint"}, {"sal_max", "$19::bigint"}, {"currency", "$20::text"},
	{"inv_email", "$21::text"}, {"plan_id", "$22::integer"}, {"status", "$23::text"},
	{"expiration_date", "now() + make_interval(days => $24::int)"}, {"city_lat", "$29::float8"},
	{"city_lon", "$30::float8"}, {"city_country", "nullif($31::text, '')"}, {"owner_key_id", "$32::bigint"},
	{"salary_period", "$34::text"}, {"workplace_type", "$35::text"}, {"external_ref", "$36::text"},
}

// planChanges is when a fingerprint match takes the request's plan: the
// request named one ($33), it is another, and the lifecycle table lets this
// caller choose the plan in the job's state ($25). A payment pays for one
// plan, so a new plan is unpaid; its expiry counts from the listing's start.
const planChanges = "$33::boolean AND EXCLUDED.plan_id <> jobs.plan_id AND jobs.status = ANY($25::text[])"

// updatedColumns are what a fingerprint match writes, each as the value it
// takes: the request's for the content, and for plan, expiry and status what
// the lifecycle table decided for this caller (jobbus.UpdateMoves): $25 the
// states whose plan and expiry are refreshed, $26[i] → $27[i] the status moves.
var updatedColumns = []struct{ name, value string }{
	{"title", "EXCLUDED.title"}, {"company", "EXCLUDED.company"}, {"description", "EXCLUDED.description"},
	{"job_type", "EXCLUDED.job_type"}, {"tags", "EXCLUDED.tags"}, {"is_remote", "EXCLUDED.is_remote"},
	{"external_url", "EXCLUDED.external_url"}, {"apply_url", "EXCLUDED.apply_url"},
	{"city_name", "EXCLUDED.city_name"}, {"city_slug", "EXCLUDED.city_slug"}, {"space_name", "EXCLUDED.space_name"},
	{"sal_min", "EXCLUDED.sal_min"}, {"sal_max", "EXCLUDED.sal_max"}, {"currency", "EXCLUDED.currency"},
	{"inv_email", "EXCLUDED.inv_email"}, {"city_lat", "EXCLUDED.city_lat"}, {"city_lon", "EXCLUDED.city_lon"},
	{"city_country", "EXCLUDED.city_country"}, {"salary_period", "EXCLUDED.salary_period"},
	{"workplace_type", "EXCLUDED.workplace_type"},
	{"plan_id", "CASE WHEN " + planChanges + " THEN EXCLUDED.plan_id ELSE jobs.plan_id END"},
	{"expiration_date", "CASE WHEN " + planChanges + " THEN jobs.date_added + make_interval(days => $24::int) ELSE jobs.expiration_date END"},
	{"is_paid", "CASE WHEN " + planChanges + " THEN false ELSE jobs.is_paid END"},
	{"status", "coalesce(($27::text[])[array_position($26::text[], jobs.status)], jobs.status)"},
}

// writtenColumns is the RETURNING list of upsertSQL, read by scanWritten.
const writtenColumns = `id, hash_identifier, slug, status, (xmax = 0) AS inserted, is_paid, expiration_date, apply_url,
          city_id, city_name, city_slug, plan_id, version, space_id, key_id`

// upsertSQL inserts a job or updates the one with its fingerprint, in one
// statement with its outbox rows (the expiry intent, the creation mail and
// the job's event, job.created or job.updated): one round trip (and one implicit
// transaction), so a create without an Idempotency-Key needs no BEGIN, second
// INSERT and COMMIT of its own. It says whether it wrote, and whether
// announcements are owed (stores/jobcache settles them). An active job gets an expiry intent ($28 is
// jobbus.StatusActive), a new one the poster's creation mail.
//
// The match is read first (cur), and compared with what the update would
// write: a match whose stored values already equal the new ones (a platform
// re-sending its unchanged feed) is answered as it is, without the INSERT,
// whose generated search columns PostgreSQL computes before it finds the
// conflict (BenchmarkUpsertUnchanged, make bench row e2); and it writes no
// row version, index entry, WAL or expiry intent, and keeps updated_at. The
// read uses the statement's snapshot: a match committed by a concurrent
// create after it began is found by ON CONFLICT instead, and an unchanged
// one then returns no row at all, so Upsert runs the statement again.
//
// A job with an external_ref is matched by it instead (upsertRefSQL), among
// its owner's jobs with a reference (jobs_owner_external_ref_key), and its
// update also takes the request's fingerprint, slug, city and space: the
// reference names the position, wherever and however it now reads.
var upsertSQL, upsertRefSQL = buildUpsert(false), buildUpsert(true)

// refUpdatedColumns are what a reference's match writes besides updatedColumns.
var refUpdatedColumns = []struct{ name, value string }{
	{"fingerprint", "EXCLUDED.fingerprint"}, {"slug", "EXCLUDED.slug"}, {"city_id", "EXCLUDED.city_id"},
	{"space_id", "EXCLUDED.space_id"},
}

func buildUpsert(byRef bool) string {
	updated := updatedColumns
	match := `space_id = $2::bigint AND owner_key_id = $32::bigint AND fingerprint = $5::text AND external_ref IS NULL`
	conflict := `(space_id, owner_key_id, fingerprint) WHERE external_ref IS NULL`
	if byRef {
		updated = append(append(updated[:0:0], refUpdatedColumns...), updatedColumns...)
		match = `ref_space = CASE WHEN $32::bigint = 0 THEN $2::bigint ELSE 0 END AND owner_key_id = $32::bigint AND external_ref = $36::text`
		conflict = `(ref_space, owner_key_id, external_ref) WHERE external_ref IS NOT NULL`
	}
	var cols, vals, set, old, new, same strings.Builder
	sep := func(i int, bs ...*strings.Builder) {
		if i > 0 {
			for _, b := range bs {
				b.WriteString(", ")
			}
		}
	}
	for i, c := range insertedColumns {
		sep(i, &cols, &vals)
		cols.WriteString(c.name)
		vals.WriteString(c.value)
	}
	// The update's values over cur instead of the conflicting row: EXCLUDED
	// is what would have been inserted.
	pairs := []string{"jobs.", "cur."}
	for _, c := range insertedColumns {
		pairs = append(pairs, "EXCLUDED."+c.name, c.value)
	}
	overCur := strings.NewReplacer(byLength(pairs)...)
	for i, c := range updated {
		sep(i, &set, &old, &new, &same)
		set.WriteString(c.name + " = " + c.value)
		old.WriteString("jobs." + c.name)
		new.WriteString(c.value)
		same.WriteString(overCur.Replace(c.value))
	}
	var cur strings.Builder
	for i, c := range updated {
		sep(i, &cur)
		cur.WriteString("cur." + c.name)
	}
	return `WITH cur AS MATERIALIZED (
    SELECT id, hash_identifier, slug, status, is_paid, expiration_date, apply_url, city_id, city_name, city_slug, plan_id,
           (` + cur.String() + `) IS NOT DISTINCT FROM (` + same.String() + `) AS same
    FROM jobs cur WHERE ` + match + `
),
job AS (
    INSERT INTO jobs (` + cols.String() + `)
    SELECT ` + vals.String() + ` WHERE NOT EXISTS (SELECT FROM cur WHERE same)
    ON CONFLICT ` + conflict + ` DO UPDATE SET ` + set.String() + `, updated_at = now(),
        version = jobs.version + 1
    WHERE (` + old.String() + `) IS DISTINCT FROM (` + new.String() + `)
    RETURNING ` + writtenColumns + `
),
outbox AS (
    INSERT INTO expiry_outbox (job_id, expires_at, kind)
    SELECT id, expiration_date, 'expiry' FROM job WHERE status = $28
    UNION ALL
    SELECT id, expiration_date, 'created_mail' FROM job WHERE inserted
),
events AS (
    INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
    SELECT job.id, CASE WHEN job.inserted THEN 'job.created' ELSE 'job.updated' END, job.version, job.status,
           CASE WHEN job.inserted THEN '' ELSE coalesce(cur.status, job.status) END, job.space_id, job.key_id
    FROM job LEFT JOIN cur ON cur.id = job.id
)
SELECT id, hash_identifier, slug, status, inserted, is_paid, expiration_date, apply_url,
       city_id, city_name, city_slug, plan_id, true, EXISTS (SELECT FROM unannounced) FROM job
UNION ALL
SELECT id, hash_identifier, slug, status, false, is_paid, expiration_date, apply_url,
       city_id, city_name, city_slug, plan_id, false, EXISTS (SELECT FROM unannounced) FROM cur
WHERE NOT EXISTS (SELECT FROM job)`
}

// byLength orders replacer pairs (old, new, old, new ...) by old, longest
// first, so that strings.Replacer, which tries them in argument order, never
// takes a key for a shorter one that is its prefix.
func byLength(pairs []string) []string {
	type pair struct{ old, new string }
	ps := make([]pair, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, pair{pairs[i], pairs[i+1]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return len(ps[i].old) > len(ps[j].old) })
	out := make([]string, 0, len(pairs))
	for _, p := range ps {
		out = append(out, p.old, p.new)
	}
	return out
}

func upsertArgs(nj jobbus.NewJob) []any {
	return []any{nj.HashIdentifier, nj.SpaceID, nj.SpaceName, nj.KeyID, nj.Fingerprint, nj.Title, nj.Company, nj.Description,
		nj.JobType, nj.Tags, nj.IsRemote, nj.Slug, nj.ExternalURL, nj.ApplyURL, nj.City.ID, nj.City.Name, nj.City.Slug,
		nj.SalMin, nj.SalMax, nj.Currency, nj.InvEmail, nj.Plan.ID, nj.Status, nj.Plan.ExpirationDays,
		nj.Refresh, nj.UpdateFrom, nj.UpdateTo, jobbus.StatusActive, cityCoord(nj.City.Lat, nj.City), cityCoord(nj.City.Lon, nj.City),
		nj.City.CountryCode, nj.OwnerKeyID, nj.PlanGiven, jobbus.PeriodOf(nj.SalaryPeriod), jobbus.WorkplaceOf(nj.WorkplaceType, nj.IsRemote),
		nj.ExternalRef}
}

// cityCoord is a coordinate to store: NULL for a city the directory sent
// without one (0,0 is the Gulf of Guinea, where no coworking city lies).
func cityCoord(v float64, c jobbus.City) *float64 {
	if c.Lat == 0 && c.Lon == 0 {
		return nil
	}
	return &v
}

// scanWritten reads the answer of upsertSQL.
func scanWritten(row pgx.Row, nj jobbus.NewJob) (w jobbus.Written, planID int, err error) {
	if err := row.Scan(&w.JobID, &w.HashIdentifier, &w.Slug, &w.Status, &w.Inserted, &w.IsPaid, &w.ExpirationDate, &w.ApplyURL,
		&w.City.ID, &w.City.Name, &w.City.Slug, &planID, &w.Wrote, &w.Owed); err != nil {
		return jobbus.Written{}, 0, fmt.Errorf("upsert job: %w", err)
	}
	w.City.Confirmed = true
	w.Plan = nj.Plan
	return w, planID, nil
}

// upsert runs upsertSQL. No row means the unchanged match was committed by a
// concurrent create after the statement's snapshot was taken; the next run
// (a new snapshot under READ COMMITTED) sees it.
func upsert(ctx context.Context, q jobsearch.DB, nj jobbus.NewJob) (jobbus.Written, error) {
	for attempt := 1; ; attempt++ {
		stmt := upsertSQL
		if nj.ExternalRef != nil {
			stmt = upsertRefSQL
		}
		w, planID, err := upsertGeneric(ctx, q, stmt, upsertArgs(nj), nj)
		if errors.Is(err, pgx.ErrNoRows) && attempt < 3 {
			continue
		}
		// An update that keeps the job's plan answers with it.
		if err == nil && planID != nj.Plan.ID {
			if err := q.QueryRow(ctx, `SELECT id, name, price, currency, expiration_days, active FROM plans WHERE id = $1`, planID).
				Scan(&w.Plan.ID, &w.Plan.Name, &w.Plan.Price, &w.Plan.Currency, &w.Plan.ExpirationDays, &w.Plan.Active); err != nil {
				return jobbus.Written{}, fmt.Errorf("select job plan: %w", err)
			}
		}
		return w, err
	}
}

// upsertGeneric runs the create's statement with a generic plan, in the same
// round trip as the settings around it. Left to itself PostgreSQL keeps
// choosing a custom plan for this prepared statement and plans its four CTEs
// on every create (make bench row d, docs/benchmarks.md); the plan has no
// choice a parameter could change. The setting is the session's for the
// statement only: reset after it, and undone with the implicit transaction
// when the statement fails (TestCreatePlanSettingDoesNotLeak).
func upsertGeneric(ctx context.Context, q jobsearch.DB, stmt string, args []any, nj jobbus.NewJob) (jobbus.Written, int, error) {
	b := &pgx.Batch{}
	b.Queue(`SET plan_cache_mode = force_generic_plan`)
	b.Queue(stmt, args...)
	b.Queue(`RESET plan_cache_mode`)
	br := q.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return jobbus.Written{}, 0, fmt.Errorf("upsert job: %w", err)
	}
	w, planID, err := scanWritten(br.QueryRow(), nj)
	if err != nil {
		_ = br.Close()
		return jobbus.Written{}, 0, err
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return jobbus.Written{}, 0, fmt.Errorf("upsert job: %w", err)
	}
	if err := br.Close(); err != nil {
		return jobbus.Written{}, 0, fmt.Errorf("upsert job: %w", err)
	}
	return w, planID, nil
}

// Upsert implements jobbus.JobStorer.
func (s *Store) Upsert(ctx context.Context, nj jobbus.NewJob) (jobbus.Written, error) {
	return upsert(ctx, s.db, nj)
}

// ReplaceCandidates implements jobbus.BatchStorer, on jobs_owner_external_ref_key.
func (s *Store) ReplaceCandidates(ctx context.Context, spaceID, ownerKeyID int64, prefix string, keep []string) ([]jobbus.ReplaceCandidate, error) {
	refSpace := int64(0)
	if ownerKeyID == 0 {
		refSpace = spaceID
	}
	// starts_with keeps the index's (ref_space, owner_key_id) prefix; the
	// references of one owner are few enough to filter.
	rows, err := s.db.Query(ctx, `SELECT id, external_ref FROM jobs
		WHERE ref_space = $1 AND owner_key_id = $2 AND external_ref IS NOT NULL AND NOT (external_ref = ANY($3::text[]))
		  AND CASE WHEN $4 = '' THEN NOT starts_with(external_ref, $5) ELSE starts_with(external_ref, $4) END
		  AND status IN ('active', 'paused')
		ORDER BY id`, refSpace, ownerKeyID, keep, prefix, jobbus.SourceRefPrefix)
	if err != nil {
		return nil, fmt.Errorf("select replace candidates: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobbus.ReplaceCandidate, error) {
		var c jobbus.ReplaceCandidate
		return c, r.Scan(&c.JobID, &c.ExternalRef)
	})
}
