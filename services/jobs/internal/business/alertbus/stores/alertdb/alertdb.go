// Package alertdb stores job alerts in PostgreSQL and matches them against
// job_events (percolation: each newly visible job against the alerts of its
// keys, decided by the listing's own statement).
package alertdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// compared counts the distinct searches matching ran against a batch of
// jobs (the benchmarks' comparisons).
var compared atomic.Int64

// Compared is how many searches matching has compared with a batch so far.
func Compared() int64 { return compared.Load() }

// Store is the alerts' store.
type Store struct{ pool *pgxpool.Pool }

func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// columns are read FROM alerts a JOIN alert_addresses aa (fromAlerts): the
// address is stored once, in alert_addresses, and an Alert still has it.
const columns = `a.id, aa.email, a.search, a.frequency, a.time_zone, a.nonce, a.confirmed_at, a.paused, a.key_id, a.created_at`

const fromAlerts = ` FROM alerts a JOIN alert_addresses aa ON aa.id = a.address_id`

// returning is columns for an INSERT's RETURNING, the address given as $1.
const returning = `id, $1::text, search, frequency, time_zone, nonce, confirmed_at, paused, key_id, created_at`

func scan(row pgx.Row, a *alertbus.Alert, extra ...any) error {
	return row.Scan(append([]any{&a.ID, &a.Email, &a.Search, &a.Frequency, &a.TimeZone, &a.Nonce, &a.ConfirmedAt, &a.Paused,
		&a.KeyID, &a.CreatedAt}, extra...)...)
}

// Save implements alertbus.Store: one row per (email, search); asking again
// before the click takes the new frequency. The confirmation is the
// address's (it lists every pending search when it goes): at most one waits
// for a later time, each due lim.Every after the previous one, lim.PerDay a
// UTC day at most.
func (s *Store) Save(ctx context.Context, a alertbus.Alert, pkey string, lim alertbus.ConfirmLimits) (alertbus.Alert, bool, error) {
	var out alertbus.Alert
	var created bool
	email := privacy.Normalize(a.Email)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The address's row, locked (DO UPDATE) so that a delete of its last
		// alert running meanwhile cannot take it away under the new alert.
		var addr int64
		if err := tx.QueryRow(ctx, `INSERT INTO alert_addresses (email) VALUES ($1)
			ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING id`, email).Scan(&addr); err != nil {
			return err
		}
		row := tx.QueryRow(ctx, `INSERT INTO alerts (address_id, search, pkey, frequency, time_zone, nonce, key_id)
			VALUES ($8, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (address_id, search) DO UPDATE SET
			  frequency = CASE WHEN alerts.confirmed_at IS NULL THEN EXCLUDED.frequency ELSE alerts.frequency END,
			  time_zone = CASE WHEN alerts.confirmed_at IS NULL THEN EXCLUDED.time_zone ELSE alerts.time_zone END
			RETURNING `+returning+`, xmax = 0`, email, a.Search, pkey, a.Frequency, a.TimeZone, a.Nonce, a.KeyID, addr)
		if err := scan(row, &out, &created); err != nil {
			return err
		}
		if out.ConfirmedAt != nil {
			return nil
		}
		// The address row is locked (above): these run one address at a time.
		// A confirmation due later lists this search too when it goes. One
		// due now may be rendered already (its workflow starts before the
		// relay's transaction ends), so this search gets the next one, due
		// lim.Every after it.
		var waiting bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM alert_outbox o JOIN alerts a ON a.id = o.alert_id
			WHERE a.address_id = $1 AND o.kind = 'confirm' AND o.next_try_at > now())`, addr).Scan(&waiting); err != nil || waiting {
			return err
		}
		var due time.Time
		err := tx.QueryRow(ctx, `UPDATE alert_addresses SET
			  confirm_count = CASE WHEN confirm_day = (now() AT TIME ZONE 'UTC')::date THEN confirm_count + 1 ELSE 1 END,
			  confirm_day = (now() AT TIME ZONE 'UTC')::date,
			  confirm_due_at = greatest(now(), confirm_due_at + $2::interval)
			WHERE id = $1 AND (confirm_day IS DISTINCT FROM (now() AT TIME ZONE 'UTC')::date OR confirm_count < $3)
			RETURNING confirm_due_at`, addr, strconv.Itoa(int(lim.Every.Seconds()))+" seconds", lim.PerDay).Scan(&due)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the day's confirmations are spent: nothing is sent
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO alert_outbox (alert_id, kind, next_try_at) VALUES ($1, 'confirm', $2)`, out.ID, due)
		return err
	})
	if err != nil {
		return alertbus.Alert{}, false, fmt.Errorf("save alert: %w", err)
	}
	return out, created, nil
}

// Pending implements alertbus.Store: the unconfirmed alerts of id's address,
// oldest first, at most limit.
func (s *Store) Pending(ctx context.Context, id int64, limit int) ([]alertbus.Alert, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+columns+fromAlerts+`
		WHERE a.address_id = (SELECT address_id FROM alerts WHERE id = $1) AND a.confirmed_at IS NULL
		ORDER BY a.id LIMIT $2`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("select pending alerts: %w", err)
	}
	defer rows.Close()
	var out []alertbus.Alert
	for rows.Next() {
		var a alertbus.Alert
		if err := scan(rows, &a); err != nil {
			return nil, fmt.Errorf("scan pending alert: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Get returns an alert by id.
func (s *Store) Get(ctx context.Context, id int64) (alertbus.Alert, error) {
	var a alertbus.Alert
	err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+fromAlerts+` WHERE a.id = $1`, id), &a)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, alertbus.ErrNotFound
	}
	if err != nil {
		return a, fmt.Errorf("select alert: %w", err)
	}
	return a, nil
}

// Confirm marks the alert confirmed (once: a second click changes nothing).
func (s *Store) Confirm(ctx context.Context, id int64) error {
	return s.exec(ctx, "confirm alert", `UPDATE alerts SET confirmed_at = coalesce(confirmed_at, now()) WHERE id = $1`, id)
}

// Update changes an alert's frequency or pause (nil: unchanged). Its next
// digest is computed anew by the digest clock's next tick (a resumed alert
// waits for its next morning, not the one it missed).
func (s *Store) Update(ctx context.Context, id int64, frequency *string, paused *bool) error {
	return s.exec(ctx, "update alert", `UPDATE alerts SET frequency = coalesce($2, frequency), paused = coalesce($3, paused),
		next_digest_at = NULL WHERE id = $1`, id, frequency, paused)
}

// Delete deletes an alert with its matches, and its address when no other
// alert holds it (the newsletter's copy is community's own, docs/privacy.md).
func (s *Store) Delete(ctx context.Context, id int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var addr int64
		if err := tx.QueryRow(ctx, `DELETE FROM alerts WHERE id = $1 RETURNING address_id`, id).Scan(&addr); err != nil {
			return err
		}
		return dropAddresses(ctx, tx, []int64{addr})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return alertbus.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete alert: %w", err)
	}
	return nil
}

// dropAddresses deletes the addresses of ids that no alert holds any more.
// An alert saved meanwhile for one of them (its Save holds the row's lock,
// so this statement waits and then fails the foreign key) keeps them all:
// the savepoint keeps the caller's deletes, and the hourly sweep
// (PurgeUnconfirmed) takes what is left unheld.
func dropAddresses(ctx context.Context, tx pgx.Tx, ids []int64) error {
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, `DELETE FROM alert_addresses aa WHERE aa.id = ANY($1)
			AND NOT EXISTS (SELECT 1 FROM alerts WHERE address_id = aa.id)`, ids)
		return err
	})
	if pg.IsForeignKeyViolation(err) {
		return nil
	}
	return err
}

// Matches are the newest jobs matched by an alert (its feed).
func (s *Store) Matches(ctx context.Context, id int64, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_id FROM alert_matches WHERE alert_id = $1 ORDER BY matched_at DESC, job_id DESC LIMIT $2`,
		id, limit)
	if err != nil {
		return nil, fmt.Errorf("select alert matches: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// PurgeUnconfirmed deletes the alerts unconfirmed after alertbus.UnconfirmedTTL,
// then every address no alert holds (theirs, and any a race left).
func (s *Store) PurgeUnconfirmed(ctx context.Context) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM alerts WHERE confirmed_at IS NULL AND created_at < now() - $1::interval`,
			strconv.Itoa(int(alertbus.UnconfirmedTTL.Seconds()))+" seconds")
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			_, err := sp.Exec(ctx, `DELETE FROM alert_addresses aa WHERE NOT EXISTS (SELECT 1 FROM alerts WHERE address_id = aa.id)`)
			if pg.IsForeignKeyViolation(err) {
				return nil // an alert saved meanwhile: the next sweep
			}
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("purge unconfirmed alerts: %w", err)
	}
	return n, nil
}

func (s *Store) exec(ctx context.Context, what, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return alertbus.ErrNotFound
	}
	return nil
}

// Match is the alert matcher's eventbus.Handler: the jobs that became
// visible in a batch of events (published, resumed, relisted, or created
// active: status active after, not before, whatever the event's name),
// each compared with the confirmed alerts of its keys, the pairs the
// alert's search lists recorded (each once, ever: a batch matched twice
// records and mails nothing twice) with an outbox mail for the instant
// ones, in one transaction. It reports the matches.
func (s *Store) Match(ctx context.Context, evs []jobbus.JobEvent, parse Parse) (matches int, err error) {
	var jobIDs []int64
	seen := map[int64]bool{}
	for _, e := range evs {
		if e.Status == jobbus.StatusActive && e.PrevStatus != jobbus.StatusActive && !seen[e.JobID] {
			seen[e.JobID] = true
			jobIDs = append(jobIDs, e.JobID)
		}
	}
	if len(jobIDs) == 0 {
		return 0, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		matches, err = matchJobs(ctx, tx, jobIDs, parse)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("match alerts: %w", err)
	}
	return matches, nil
}

// matchJobs percolates jobIDs: the candidate alerts are those whose key is
// one of the jobs' (or ”), grouped by search so each distinct search runs
// once over the whole batch.
func matchJobs(ctx context.Context, tx pgx.Tx, jobIDs []int64, parse Parse) (int, error) {
	rows, err := tx.Query(ctx, `SELECT city_slug, tag_list FROM jobs WHERE id = ANY($1) AND status = 'active'`, jobIDs)
	if err != nil {
		return 0, err
	}
	keySet := map[string]bool{}
	for rows.Next() {
		var city string
		var tags []string
		if err := rows.Scan(&city, &tags); err != nil {
			rows.Close()
			return 0, err
		}
		for _, k := range alertbus.JobKeys(city, tags) {
			keySet[k] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(keySet) == 0 {
		return 0, nil // none of them is still listed
	}
	words, err := wordKeys(ctx, tx, jobIDs)
	if err != nil {
		return 0, err
	}
	for _, k := range words {
		keySet[k] = true
	}
	keys := make([]string, 0, len(keySet))
	for k := range keySet {
		keys = append(keys, k)
	}
	type group struct {
		search string
		alerts []int64
	}
	rows, err = tx.Query(ctx, `SELECT search, array_agg(id) FROM alerts
		WHERE confirmed_at IS NOT NULL AND NOT paused AND pkey = ANY($1) GROUP BY search`, keys)
	if err != nil {
		return 0, err
	}
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (group, error) {
		var g group
		return g, r.Scan(&g.search, &g.alerts)
	})
	if err != nil {
		return 0, err
	}
	compared.Add(int64(len(groups)))
	total := 0
	for _, g := range groups {
		f, ok := parse(g.search)
		if !ok {
			continue
		}
		f.JobIDs, f.Sort, f.Limit, f.Offset, f.SpaceID = jobIDs, jobbus.SortNewest, 0, 0, 0
		listed, err := ListIDs(ctx, tx, f)
		if err != nil {
			return 0, err
		}
		if len(listed) == 0 {
			continue
		}
		// Instant pairs go to the outbox with their record (sent_at set: a
		// digest never takes them); the others wait for their digest.
		var n int
		err = tx.QueryRow(ctx, `WITH ins AS (
			INSERT INTO alert_matches (alert_id, job_id, sent_at)
			SELECT a.id, j, CASE WHEN a.frequency = 'instant' THEN now() END
			FROM alerts a, unnest($2::bigint[]) j WHERE a.id = ANY($1)
			ON CONFLICT DO NOTHING RETURNING alert_id, job_id, sent_at),
		ob AS (INSERT INTO alert_outbox (alert_id, kind, job_id) SELECT alert_id, 'match', job_id FROM ins WHERE sent_at IS NOT NULL)
		SELECT count(*) FROM ins`, g.alerts, listed).Scan(&n)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ListIDs are the ids of the jobs GET /v2/jobs lists for f (its own
// statement), the matching's oracle and its tests'.
func ListIDs(ctx context.Context, tx jobsearch.DB, f jobbus.ListFilter) ([]int64, error) {
	rows, err := jobsearch.List(ctx, tx, f)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	var j jobbus.Job
	for rows.Next() {
		if err := rows.Scan(&j); err != nil {
			return nil, err
		}
		ids = append(ids, j.ID)
	}
	return ids, rows.Err()
}

// OutboxItem and Parse are alertbus's (MailStorer).
type (
	OutboxItem = alertbus.OutboxItem
	Parse      = alertbus.Parse
)

var _ alertbus.MailStorer = (*Store)(nil)

// OutboxTable is alert_outbox for outbox.Relay (the mails keep no order).
func (s *Store) OutboxTable() outbox.Table[OutboxItem] {
	return outbox.Table[OutboxItem]{DB: s.pool, Name: "alert_outbox", Due: "next_try_at",
		Columns: []string{"alert_id", "kind", "job_id", "digest_at"},
		Payload: func(it *OutboxItem) []any { return []any{&it.AlertID, &it.Kind, &it.JobID, &it.DigestAt} }}
}
