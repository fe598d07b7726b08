package jobdb

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Reading job_events in commit order. A sequence (or a clock) alone is
// not that order: transaction A takes seq 9, B takes 10 and commits first,
// and a reader that went past 10 never sees 9. So each row keeps its
// transaction's id (xid8, never wrapping), and a reader takes only rows of
// transactions older than every transaction still in progress
// (pg_snapshot_xmin of its snapshot), in (xid, seq) order: any row that
// commits later belongs to a transaction at or above that horizon, so above
// every position already served. A transaction held open delays the rows
// after it; it never lets a reader skip one.

// eventColumns are a job_events row as scanEvent reads it.
const eventColumns = `e.id::text, e.job_id, e.type, e.version, e.status, e.prev_status, e.space_id, e.key_id,
	e.occurred_at, e.xid::text::bigint, e.seq`

// eventsAfterSQL reads a page of events past ($1, $2) heard by the
// audience ($3 space, $4 key; $7 false: everyone), occurred at or after $5
// (NULL: any time), up to $6, each with its job as it is now (found false
// and zero values when the job is gone); and last a row of the horizon
// (its xid column), from the same snapshot: when the page is short, every
// event a reader may hear below the horizon was read, so it may go on from
// there. One statement: the feed's page is one round trip.
const eventsAfterSQL = `WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
page AS (
    SELECT e.* FROM job_events e, horizon h
    WHERE (e.xid, e.seq) > ($1::text::xid8, $2::bigint) AND e.xid < h.xmin
      AND ($5::timestamptz IS NULL OR e.occurred_at >= $5)
      AND (NOT $7 OR event_heard($3::bigint, $4::bigint, e.space_id, e.key_id, e.status, e.prev_status))
    ORDER BY e.xid, e.seq LIMIT $6
)
SELECT * FROM (
    SELECT false AS last, ` + eventColumns + `, j.id IS NOT NULL AS found, ` + nullableDetailColumns + `
    FROM page e LEFT JOIN jobs j ON j.id = e.job_id LEFT JOIN plans p ON p.id = j.plan_id
    UNION ALL
    SELECT true, '', 0, '', 0, '', '', 0, 0, now(), xmin::text::bigint, 0, false, ` + nullableDetailColumns + `
    FROM horizon LEFT JOIN jobs j ON false LEFT JOIN plans p ON false
) r ORDER BY last, xid, seq`

// nullableDetailColumns are detailColumns' (without FROM) with the
// columns Detail holds as values coalesced: a gone job scans as zeros.
const nullableDetailColumns = `coalesce(j.id, 0), coalesce(j.title, ''), coalesce(j.company, ''), coalesce(j.job_type, ''),
	coalesce(j.tags, ''), coalesce(j.is_remote, false), coalesce(j.slug, ''), coalesce(j.external_url, ''), j.apply_url,
	coalesce(j.company_logo, ''), coalesce(j.date_added, 'epoch'), coalesce(j.expiration_date, 'epoch'), coalesce(j.city_name, ''),
	coalesce(j.city_slug, ''), j.space_name, j.sal_min, j.sal_max,
	coalesce(j.currency, ''), coalesce(j.description, ''), coalesce(j.city_id, 0), coalesce(j.space_id, 0), coalesce(j.key_id, 0),
	coalesce(j.status, ''), coalesce(j.updated_at, 'epoch'), coalesce(j.is_paid, false), j.paused_at,
	coalesce(j.inv_email, ''), coalesce(j.hash_identifier, ''), coalesce(j.city_country, ''), coalesce(j.version, 0),
	coalesce(j.salary_period, ''), coalesce(j.workplace_type, ''), j.external_ref, coalesce(p.id, 0), coalesce(p.name, ''),
	coalesce(p.price, 0), coalesce(p.currency, ''), coalesce(p.expiration_days, 0), coalesce(p.active, false)`

// EventsAfter implements jobbus.EventStorer. It reads the primary: the
// horizon is the primary's.
func (s *Store) EventsAfter(ctx context.Context, a *jobbus.Audience, after jobbus.Cursor, since time.Time, limit int) ([]jobbus.JobEvent, []jobbus.Detail, jobbus.Cursor, error) {
	var space, key int64
	if a != nil {
		space, key = a.SpaceID, a.KeyID
	}
	var sinceArg *time.Time
	if !since.IsZero() {
		sinceArg = &since
	}
	rows, err := s.db.Query(ctx, eventsAfterSQL, strconv.FormatUint(after.XID, 10), after.Seq, space, key, sinceArg, limit, a != nil)
	if err != nil {
		return nil, nil, after, fmt.Errorf("select events: %w", err)
	}
	defer rows.Close()
	var evs []jobbus.JobEvent
	var jobs []jobbus.Detail
	seen := map[int64]bool{}
	var last bool
	for rows.Next() {
		var e jobbus.JobEvent
		var xid int64
		var found bool
		var d jobbus.Detail
		if err := rows.Scan(&last, &e.ID, &e.JobID, &e.Type, &e.Version, &e.Status, &e.PrevStatus, &e.SpaceID, &e.KeyID,
			&e.OccurredAt, &xid, &e.Cursor.Seq, &found,
			&d.ID, &d.Title, &d.Company, &d.JobType, &d.Tags, &d.IsRemote, &d.Slug, &d.ExternalURL, &d.ApplyURL,
			&d.CompanyLogo, &d.DateAdded, &d.ExpirationDate, &d.CityName, &d.CitySlug, &d.SpaceName, &d.SalMin, &d.SalMax,
			&d.Currency, &d.Description, &d.CityID, &d.SpaceID, &d.KeyID, &d.Status, &d.UpdatedAt, &d.IsPaid, &d.PausedAt,
			&d.InvEmail, &d.HashIdentifier, &d.CityCountry, &d.Version, &d.SalaryPeriod, &d.WorkplaceType, &d.ExternalRef,
			&d.Plan.ID, &d.Plan.Name, &d.Plan.Price, &d.Plan.Currency, &d.Plan.ExpirationDays, &d.Plan.Active); err != nil {
			return nil, nil, after, fmt.Errorf("select events: %w", err)
		}
		e.Cursor.XID, e.Cursor.At = uint64(xid), e.OccurredAt //nolint:gosec // G115: an xid8 stays below 2^63
		evs = append(evs, e)
		if found && !seen[d.ID] {
			seen[d.ID] = true
			jobs = append(jobs, d)
		}
	}
	if err := rows.Err(); err != nil || !last {
		return nil, nil, after, fmt.Errorf("select events: %w", err)
	}
	horizon := evs[len(evs)-1].Cursor
	evs = evs[:len(evs)-1]
	next := after
	switch {
	case len(evs) < limit && horizon.XID > 0:
		// Every event below the horizon was read: go on from just under it.
		if h := (jobbus.Cursor{XID: horizon.XID - 1, Seq: math.MaxInt64, At: horizon.At}); less(next, h) {
			next = h
		}
	case len(evs) > 0:
		next = evs[len(evs)-1].Cursor
	}
	return evs, jobs, next, nil
}

func less(a, b jobbus.Cursor) bool { return a.XID < b.XID || a.XID == b.XID && a.Seq < b.Seq }

// PurgeEvents deletes up to limit events that occurred before cutoff.
func (s *Store) PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM job_events WHERE seq IN
		(SELECT seq FROM job_events WHERE occurred_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return tag.RowsAffected(), nil
}
