// Package jobdb is the PostgreSQL store of the jobs schema.
package jobdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Store implements jobbus.Storer.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store over pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Plan implements jobbus.Storer.
func (s *Store) Plan(ctx context.Context, id int) (jobbus.Plan, error) {
	var p jobbus.Plan
	err := s.pool.QueryRow(ctx, `SELECT id, name, price, expiration_days, active FROM plans WHERE id = $1`, id).
		Scan(&p.ID, &p.Name, &p.Price, &p.ExpirationDays, &p.Active)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.Plan{}, jobbus.ErrNotFound
	}
	if err != nil {
		return jobbus.Plan{}, fmt.Errorf("select plan: %w", err)
	}
	return p, nil
}

// StoredResponse implements jobbus.Storer.
func (s *Store) StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	return storedResponse(ctx, s.pool, keyID, key, since)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func storedResponse(ctx context.Context, q querier, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	var r jobbus.StoredResponse
	err := q.QueryRow(ctx, `SELECT request_hash, response_status, response_body, created_at
		FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2 AND created_at > $3`, keyID, key, since).
		Scan(&r.RequestHash, &r.Status, &r.Body, &r.CreatedAt)
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

// updatedColumns are what a fingerprint match writes, each as the value it
// takes: the request's for the content, and for plan, expiry and status the
// rules of States and transitions (an update never revives an expired, paused
// or closed job; a draft may become active when the caller now qualifies).
var updatedColumns = []struct{ name, value string }{
	{"title", "EXCLUDED.title"}, {"company", "EXCLUDED.company"}, {"description", "EXCLUDED.description"},
	{"job_type", "EXCLUDED.job_type"}, {"tags", "EXCLUDED.tags"}, {"is_remote", "EXCLUDED.is_remote"},
	{"external_url", "EXCLUDED.external_url"}, {"apply_url", "EXCLUDED.apply_url"},
	{"city_name", "EXCLUDED.city_name"}, {"city_slug", "EXCLUDED.city_slug"}, {"space_name", "EXCLUDED.space_name"},
	{"sal_min", "EXCLUDED.sal_min"}, {"sal_max", "EXCLUDED.sal_max"}, {"currency", "EXCLUDED.currency"},
	{"inv_email", "EXCLUDED.inv_email"},
	{"plan_id", "CASE WHEN jobs.status IN ('draft', 'active') THEN EXCLUDED.plan_id ELSE jobs.plan_id END"},
	{"expiration_date", "CASE WHEN jobs.status IN ('draft', 'active') THEN jobs.date_added + make_interval(days => $24::int) ELSE jobs.expiration_date END"},
	{"status", "CASE WHEN jobs.status = 'draft' THEN EXCLUDED.status ELSE jobs.status END"},
}

// writtenColumns is the RETURNING list of upsertSQL, read by scanWritten.
const writtenColumns = `id, hash_identifier, slug, status, (xmax = 0) AS inserted, is_paid, expiration_date, apply_url,
          city_id, city_name, city_slug, plan_id`

// upsertSQL inserts a job or updates the one with its fingerprint. The
// update's WHERE skips a match whose stored values already equal the new
// ones (a platform re-sending its unchanged feed): no new row version, index
// entries, WAL or expiry intent, and updated_at keeps the last real change.
// Such a match returns no row; upsertWithOutboxSQL then reads the job as it is.
var upsertSQL = func() string {
	var set, old, new strings.Builder
	for i, c := range updatedColumns {
		if i > 0 {
			set.WriteString(", ")
			old.WriteString(", ")
			new.WriteString(", ")
		}
		set.WriteString(c.name + " = " + c.value)
		old.WriteString("jobs." + c.name)
		new.WriteString(c.value)
	}
	return `
INSERT INTO jobs (hash_identifier, space_id, space_name, key_id, fingerprint, title, company, description,
                  job_type, tags, is_remote, slug, external_url, apply_url, city_id, city_name, city_slug,
                  sal_min, sal_max, currency, inv_email, plan_id, status, expiration_date)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
        now() + make_interval(days => $24::int))
ON CONFLICT (space_id, fingerprint) DO UPDATE SET ` + set.String() + `, updated_at = now()
WHERE (` + old.String() + `) IS DISTINCT FROM (` + new.String() + `)
RETURNING ` + writtenColumns
}()

// upsertWithOutboxSQL is upsertSQL and its expiry intent in one statement, so
// one round trip (and one implicit transaction) writes both: a create without
// an Idempotency-Key needs no BEGIN, second INSERT and COMMIT of its own. An
// unchanged match is read back as it is (the second SELECT); that read uses
// the statement's snapshot, so a match committed by a concurrent create after
// it began returns no row at all, and Upsert runs the statement again.
var upsertWithOutboxSQL = `WITH job AS (` + upsertSQL + `),
outbox AS (
    INSERT INTO expiry_outbox (job_id, expires_at)
    SELECT id, expiration_date FROM job WHERE status IN ('active', 'draft')
)
SELECT id, hash_identifier, slug, status, inserted, is_paid, expiration_date, apply_url,
       city_id, city_name, city_slug, plan_id FROM job
UNION ALL
SELECT id, hash_identifier, slug, status, false, is_paid, expiration_date, apply_url,
       city_id, city_name, city_slug, plan_id FROM jobs
WHERE space_id = $2 AND fingerprint = $5 AND NOT EXISTS (SELECT FROM job)`

func upsertArgs(nj jobbus.NewJob) []any {
	return []any{nj.HashIdentifier, nj.SpaceID, nj.SpaceName, nj.KeyID, nj.Fingerprint, nj.Title, nj.Company, nj.Description,
		nj.JobType, nj.Tags, nj.IsRemote, nj.Slug, nj.ExternalURL, nj.ApplyURL, nj.City.ID, nj.City.Name, nj.City.Slug,
		nj.SalMin, nj.SalMax, nj.Currency, nj.InvEmail, nj.Plan.ID, nj.Status, nj.Plan.ExpirationDays}
}

// scanWritten reads the RETURNING list of upsertSQL and completes w's plan.
func scanWritten(ctx context.Context, q querier, row pgx.Row, nj jobbus.NewJob) (jobbus.Written, error) {
	var w jobbus.Written
	var planID int
	if err := row.Scan(&w.JobID, &w.HashIdentifier, &w.Slug, &w.Status, &w.Inserted, &w.IsPaid, &w.ExpirationDate, &w.ApplyURL,
		&w.City.ID, &w.City.Name, &w.City.Slug, &planID); err != nil {
		return jobbus.Written{}, fmt.Errorf("upsert job: %w", err)
	}
	w.City.Confirmed = true
	w.Plan = nj.Plan
	// An update of an expired or paused job keeps its plan.
	if planID != nj.Plan.ID {
		if err := q.QueryRow(ctx, `SELECT id, name, price, expiration_days, active FROM plans WHERE id = $1`, planID).
			Scan(&w.Plan.ID, &w.Plan.Name, &w.Plan.Price, &w.Plan.ExpirationDays, &w.Plan.Active); err != nil {
			return jobbus.Written{}, fmt.Errorf("select job plan: %w", err)
		}
	}
	return w, nil
}

// upsert runs upsertWithOutboxSQL. No row means the unchanged match was
// committed by a concurrent create after the statement's snapshot was taken;
// the next run (a new snapshot under READ COMMITTED) sees it.
func upsert(ctx context.Context, q querier, nj jobbus.NewJob) (jobbus.Written, error) {
	for attempt := 1; ; attempt++ {
		w, err := scanWritten(ctx, q, q.QueryRow(ctx, upsertWithOutboxSQL, upsertArgs(nj)...), nj)
		if !errors.Is(err, pgx.ErrNoRows) || attempt == 3 {
			return w, err
		}
	}
}

// Upsert implements jobbus.Storer.
func (s *Store) Upsert(ctx context.Context, nj jobbus.NewJob, idem *jobbus.Idempotency, since time.Time,
	finish func(jobbus.Written) (int, []byte, error)) (jobbus.Written, *jobbus.StoredResponse, error) {
	if idem == nil {
		w, err := upsert(ctx, s.pool, nj)
		if err != nil {
			return jobbus.Written{}, nil, err
		}
		if _, _, err := finish(w); err != nil {
			return jobbus.Written{}, nil, fmt.Errorf("render result: %w", err)
		}
		return w, nil, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return jobbus.Written{}, nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey(idem.KeyID, idem.Key)).Scan(&locked); err != nil {
		return jobbus.Written{}, nil, fmt.Errorf("lock idempotency key: %w", err)
	}
	if !locked {
		return jobbus.Written{}, nil, jobbus.ErrInFlight
	}
	stored, err := storedResponse(ctx, tx, idem.KeyID, idem.Key, since)
	switch {
	case err == nil:
		return jobbus.Written{}, &stored, nil
	case !errors.Is(err, jobbus.ErrNotFound):
		return jobbus.Written{}, nil, err
	}
	// An expired record of the same key gives way to the new request.
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2`, idem.KeyID, idem.Key); err != nil {
		return jobbus.Written{}, nil, fmt.Errorf("delete expired idempotency key: %w", err)
	}

	// The expiry intent commits with the job; the relay hands it to Temporal.
	w, err := upsert(ctx, tx, nj)
	if err != nil {
		return jobbus.Written{}, nil, err
	}

	status, body, err := finish(w)
	if err != nil {
		return jobbus.Written{}, nil, fmt.Errorf("render result: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (key_id, idem_key, request_hash, response_status, response_body, job_id)
		VALUES ($1, $2, $3, $4, $5, $6)`, idem.KeyID, idem.Key, idem.RequestHash, status, body, w.JobID); err != nil {
		if pg.IsUniqueViolation(err) {
			return jobbus.Written{}, nil, jobbus.ErrInFlight
		}
		return jobbus.Written{}, nil, fmt.Errorf("insert idempotency key: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return jobbus.Written{}, nil, fmt.Errorf("commit job: %w", err)
	}
	return w, nil, nil
}

const listColumns = `id, title, company, job_type, tags, is_remote, slug, external_url, apply_url, company_logo,
	date_added, expiration_date, city_name, city_slug, space_name, sal_min, sal_max, currency`

// where builds the filter of a listing; every value is a parameter.
func where(f jobbus.ListFilter) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 6)
	b.WriteString(` FROM jobs WHERE status = 'active' AND expiration_date > now()`)
	if f.Query != "" {
		args = append(args, "%"+EscapeLike(f.Query)+"%")
		b.WriteString(` AND search_text ILIKE $` + strconv.Itoa(len(args)))
	}
	if f.JobType != "" {
		args = append(args, f.JobType)
		b.WriteString(` AND job_type = $` + strconv.Itoa(len(args)))
	}
	if f.Remote {
		b.WriteString(` AND is_remote`)
	}
	if f.CitySlug != "" {
		args = append(args, f.CitySlug)
		b.WriteString(` AND city_slug = $` + strconv.Itoa(len(args)))
	}
	if f.SpaceID != 0 {
		args = append(args, f.SpaceID)
		b.WriteString(` AND space_id = $` + strconv.Itoa(len(args)))
	}
	return b.String(), args
}

// EscapeLike escapes the LIKE wildcards of s (backslash is the escape).
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ListSQL is the SQL of a listing (the benchmark harness runs it under pgbench).
func ListSQL(f jobbus.ListFilter) (string, []any) {
	w, args := where(f)
	q := `SELECT ` + listColumns + w + ` ORDER BY date_added DESC, id DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit, f.Offset)
		q += ` LIMIT $` + strconv.Itoa(len(args)-1) + ` OFFSET $` + strconv.Itoa(len(args))
	}
	return q, args
}

type rows struct{ pgx.Rows }

func (r rows) Scan(j *jobbus.Job) error {
	return r.Rows.Scan(&j.ID, &j.Title, &j.Company, &j.JobType, &j.Tags, &j.IsRemote, &j.Slug, &j.ExternalURL,
		&j.ApplyURL, &j.CompanyLogo, &j.DateAdded, &j.ExpirationDate, &j.CityName, &j.CitySlug, &j.SpaceName,
		&j.SalMin, &j.SalMax, &j.Currency)
}

// List implements jobbus.Storer.
func (s *Store) List(ctx context.Context, f jobbus.ListFilter) (jobbus.JobRows, error) {
	q, args := ListSQL(f)
	r, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return rows{r}, nil
}

// CountSQL is the SQL of a listing's total (the benchmark harness runs it
// under pgbench with ListSQL, as Page does).
func CountSQL(f jobbus.ListFilter) (string, []any) {
	w, args := where(f)
	return `SELECT count(*)` + w, args
}

// Page implements jobbus.Storer: the count and the page in one round trip.
func (s *Store) Page(ctx context.Context, f jobbus.ListFilter) ([]jobbus.Job, int, error) {
	cq, cargs := CountSQL(f)
	q, args := ListSQL(f)
	batch := &pgx.Batch{}
	batch.Queue(cq, cargs...)
	batch.Queue(q, args...)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	var total int
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count jobs: %w", err)
	}
	r, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("page jobs: %w", err)
	}
	defer r.Close()
	jobs := make([]jobbus.Job, 0, f.Limit)
	for r.Next() {
		var j jobbus.Job
		if err := (rows{r}).Scan(&j); err != nil {
			return nil, 0, fmt.Errorf("scan job: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := r.Err(); err != nil {
		return nil, 0, fmt.Errorf("page jobs: %w", err)
	}
	return jobs, total, nil
}

// Feed implements jobbus.Storer.
func (s *Store) Feed(ctx context.Context, limit int) ([]jobbus.Job, error) {
	r, err := s.pool.Query(ctx, `SELECT `+listColumns+`, description FROM jobs
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

// JobOwner implements jobbus.Storer.
func (s *Store) JobOwner(ctx context.Context, jobID int64) (int64, int64, string, error) {
	var spaceID, keyID int64
	var status string
	err := s.pool.QueryRow(ctx, `SELECT space_id, key_id, status FROM jobs WHERE id = $1`, jobID).Scan(&spaceID, &keyID, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, "", jobbus.ErrNotFound
	}
	if err != nil {
		return 0, 0, "", fmt.Errorf("select job owner: %w", err)
	}
	return spaceID, keyID, status, nil
}

// Expire implements jobbus.Storer. The conditional UPDATE takes the row
// lock, so of concurrent callers exactly one sees its row change.
func (s *Store) Expire(ctx context.Context, jobID int64, from []string) (bool, string, error) {
	var status string
	err := s.pool.QueryRow(ctx, `UPDATE jobs SET status = 'expired', updated_at = now()
		WHERE id = $1 AND status = ANY($2) RETURNING status`, jobID, from).Scan(&status)
	if err == nil {
		return true, status, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", fmt.Errorf("expire job: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT status FROM jobs WHERE id = $1`, jobID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", jobbus.ErrNotFound
	}
	if err != nil {
		return false, "", fmt.Errorf("select job status: %w", err)
	}
	return false, status, nil
}
