package jobdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// detailColumns is one job with its plan, read by scanDetail.
const detailColumns = `j.id, j.title, j.company, j.job_type, j.tags, j.is_remote, j.slug, j.external_url, j.apply_url,
	j.company_logo, j.date_added, j.expiration_date, j.city_name, j.city_slug, j.space_name, j.sal_min, j.sal_max,
	j.currency, j.description, j.city_id, j.space_id, j.key_id, j.status, j.updated_at, j.is_paid, j.paused_at,
	j.inv_email, j.hash_identifier, coalesce(j.city_country, ''), j.version, j.salary_period, j.workplace_type, j.external_ref, p.id, p.name, p.price, p.currency, p.expiration_days, p.active
	FROM jobs j JOIN plans p ON p.id = j.plan_id`

func scanDetail(row pgx.Row) (jobbus.Detail, error) {
	var d jobbus.Detail
	err := row.Scan(&d.ID, &d.Title, &d.Company, &d.JobType, &d.Tags, &d.IsRemote, &d.Slug, &d.ExternalURL, &d.ApplyURL,
		&d.CompanyLogo, &d.DateAdded, &d.ExpirationDate, &d.CityName, &d.CitySlug, &d.SpaceName, &d.SalMin, &d.SalMax,
		&d.Currency, &d.Description, &d.CityID, &d.SpaceID, &d.KeyID, &d.Status, &d.UpdatedAt, &d.IsPaid, &d.PausedAt,
		&d.InvEmail, &d.HashIdentifier, &d.CityCountry, &d.Version, &d.SalaryPeriod, &d.WorkplaceType, &d.ExternalRef, &d.Plan.ID, &d.Plan.Name, &d.Plan.Price, &d.Plan.Currency,
		&d.Plan.ExpirationDays, &d.Plan.Active)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.Detail{}, jobbus.ErrNotFound
	}
	if err != nil {
		return jobbus.Detail{}, fmt.Errorf("select job: %w", err)
	}
	return d, nil
}

// QueryByID implements jobbus.JobStorer: on the store's db, whoever reads.
func (s *Store) QueryByID(ctx context.Context, id int64, r jobbus.Reader) (jobbus.Detail, error) {
	q := `SELECT ` + detailColumns + ` WHERE j.id = $1`
	if r.Lock {
		q += ` FOR UPDATE OF j`
	}
	return scanDetail(s.db.QueryRow(ctx, q, id))
}

// QueryByHash implements jobbus.JobStorer. The row is found by the hash's
// digest (jobs_hash_digest_key); the caller compares the hash itself.
func (s *Store) QueryByHash(ctx context.Context, hash string) (jobbus.Detail, error) {
	return scanDetail(s.db.QueryRow(ctx, `SELECT `+detailColumns+`
		WHERE j.hash_digest = sha256(replace($1::text, '\', '\\')::bytea)`, hash))
}

// QueryBySpace implements jobbus.JobStorer (jobs_owner_fingerprint_key leads with space_id).
func (s *Store) QueryBySpace(ctx context.Context, spaceID int64, limit int) ([]jobbus.Detail, error) {
	rows, err := s.db.Query(ctx, `SELECT `+detailColumns+` WHERE j.space_id = $1 ORDER BY j.id DESC LIMIT $2`, spaceID, limit)
	if err != nil {
		return nil, fmt.Errorf("select space jobs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (jobbus.Detail, error) { return scanDetail(r) })
}

// applySQL writes a decided change while the job is still in the state it
// was decided from, its expiry intent when the timer must move, and its
// events. $3 the new status; $4 mark paid; $5 a payment was made; $6 a new
// listing period; $7 restart the clock (move the expiration by the time
// spent paused); $8 schedule the timer; $9 the is_paid the change was
// decided from; $10 the event types, in order.
const applySQL = `WITH j AS (
    UPDATE jobs j SET
        status = $3,
        is_paid = j.is_paid OR $4,
        paid_at = CASE WHEN $5 THEN now() ELSE j.paid_at END,
        date_added = CASE WHEN $6 THEN now() ELSE j.date_added END,
        expiration_date = CASE
            WHEN $6 THEN now() + make_interval(days => p.expiration_days)
            WHEN $7 AND j.paused_at IS NOT NULL THEN j.expiration_date + (now() - j.paused_at)
            ELSE j.expiration_date END,
        paused_at = CASE WHEN $3 = 'paused' THEN coalesce(j.paused_at, now()) END,
        updated_at = now(),
        version = j.version + 1
    FROM plans p
    WHERE p.id = j.plan_id AND j.id = $1 AND j.status = $2 AND j.is_paid = $9
    RETURNING j.id, j.expiration_date, j.version, j.status, j.space_id, j.key_id
), outbox AS (
    INSERT INTO expiry_outbox (job_id, expires_at, kind)
    SELECT id, expiration_date, 'expiry' FROM j WHERE $8
), events AS (
    INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
    SELECT j.id, e.type, j.version, j.status, $2, j.space_id, j.key_id
    FROM j, unnest($10::text[]) WITH ORDINALITY AS e(type, n) ORDER BY e.n
)
SELECT id FROM j`

// Apply implements jobbus.JobStorer.
func (s *Store) Apply(ctx context.Context, c jobbus.Change) (jobbus.Detail, error) {
	var id int64
	err := s.db.QueryRow(ctx, applySQL, c.JobID, c.From, c.To, c.MarkPaid(), c.Payment != nil, c.NewPeriod(),
		c.RestartClock(), c.Schedule(), c.FromPaid, c.Events()).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.Detail{}, jobbus.ErrStale
	}
	if err != nil {
		return jobbus.Detail{}, fmt.Errorf("apply %s to job %d: %w", c.Action, c.JobID, err)
	}
	return s.QueryByID(ctx, c.JobID, jobbus.Reader{Latest: true})
}

// RecordPayment implements jobbus.JobStorer.
func (s *Store) RecordPayment(ctx context.Context, p jobbus.Payment, action string) (bool, error) {
	tag, err := s.db.Exec(ctx, `INSERT INTO payments (job_id, provider, reference, amount, currency, action)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (provider, reference) DO NOTHING`,
		p.JobID, p.Provider, p.Reference, p.Amount, p.Currency, action)
	if err != nil {
		return false, fmt.Errorf("record payment: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Edit implements jobbus.JobStorer.
func (s *Store) Edit(ctx context.Context, id int64, e jobbus.Edited) (jobbus.Detail, error) {
	// The edit and its job.updated event, in one statement.
	tag, err := s.db.Exec(ctx, `WITH j AS (
		UPDATE jobs SET title = $2, company = $3, description = $4, job_type = $5, tags = $6,
		slug = $7, apply_url = $8, is_remote = $9, sal_min = $10, sal_max = $11, currency = $12, fingerprint = $13,
		salary_period = $14, workplace_type = $15, updated_at = now(), version = version + 1
		WHERE id = $1 RETURNING id, version, status, space_id, key_id
	)
	INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
	SELECT id, 'job.updated', version, status, status, space_id, key_id FROM j`,
		id, e.Title, e.Company, e.Description, e.JobType, e.Tags, e.Slug, e.ApplyURL, e.IsRemote,
		e.SalMin, e.SalMax, e.Currency, e.Fingerprint, jobbus.PeriodOf(e.SalaryPeriod), jobbus.WorkplaceOf(e.WorkplaceType, e.IsRemote))
	if pg.IsUniqueViolation(err) {
		return jobbus.Detail{}, jobbus.ErrDuplicate
	}
	if err != nil {
		return jobbus.Detail{}, fmt.Errorf("edit job %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return jobbus.Detail{}, jobbus.ErrNotFound
	}
	return s.QueryByID(ctx, id, jobbus.Reader{Latest: true})
}

// CityCoords are a city's coordinates and country.
type CityCoords struct {
	CityID   int64
	Lat, Lon float64
	Country  string // ISO 3166-1 alpha-2
}

// SetCityCoords gives every job of each city its coordinates (jobs-admin
// backfill-geo) and reports how many jobs changed.
func (s *Store) SetCityCoords(ctx context.Context, cities []CityCoords) (int64, error) {
	ids, lats, lons := make([]int64, len(cities)), make([]float64, len(cities)), make([]float64, len(cities))
	countries := make([]string, len(cities))
	for i, c := range cities {
		ids[i], lats[i], lons[i], countries[i] = c.CityID, c.Lat, c.Lon, c.Country
	}
	tag, err := s.db.Exec(ctx, `UPDATE jobs j SET city_lat = c.lat, city_lon = c.lon, city_country = nullif(c.country, '')
		FROM unnest($1::bigint[], $2::float8[], $3::float8[], $4::text[]) AS c(id, lat, lon, country)
		WHERE j.city_id = c.id AND (j.city_lat IS DISTINCT FROM c.lat OR j.city_lon IS DISTINCT FROM c.lon
		                            OR j.city_country IS DISTINCT FROM nullif(c.country, ''))`, ids, lats, lons, countries)
	if err != nil {
		return 0, fmt.Errorf("set city coordinates: %w", err)
	}
	return tag.RowsAffected(), nil
}

// QueryByIDs implements jobbus.JobStorer.
func (s *Store) QueryByIDs(ctx context.Context, ids []int64) ([]jobbus.Detail, error) {
	rows, err := s.db.Query(ctx, `SELECT `+detailColumns+` WHERE j.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("select jobs: %w", err)
	}
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (jobbus.Detail, error) { return scanDetail(row) })
	if err != nil {
		return nil, fmt.Errorf("select jobs: %w", err)
	}
	return ds, nil
}
