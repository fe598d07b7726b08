// Package indexdb keeps the search-engine notices in PostgreSQL:
// indexing_notices (one row per URL and version), the day's quota
// (indexing_quota) and the position in job_events (indexing_dispatch).
package indexdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Store reads and writes the notices.
type Store struct{ pool *pgxpool.Pool }

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// noticesSQL turns job events ($2 ids) into notices of their job's public
// page ($1 the public base URL, as the sitemap writes it), in the events'
// order. The CASE is indexbus.Type; a job's version is per change, so
// (url, version) is a notice's identity and a batch handled twice writes
// none twice.
const noticesSQL = `WITH new AS (
    SELECT e.job_id, $1::text || '/jobs/' || j.slug || '-' || e.job_id AS url, e.version,
           CASE WHEN e.status = 'active' THEN 'URL_UPDATED' ELSE 'URL_DELETED' END AS type, e.xid, e.seq
    FROM job_events e JOIN jobs j ON j.id = e.job_id
    WHERE e.id = ANY($2::uuid[]) AND (e.status = 'active' OR e.prev_status = 'active')
), ins AS (
    INSERT INTO indexing_notices (job_id, url, version, type)
    SELECT job_id, url, version, type FROM new ORDER BY xid, seq
    ON CONFLICT (url, version) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM ins`

// Notices queues the notices of a batch of job events (the index
// notifier's eventbus.Handler) and reports how many it queued.
func (s *Store) Notices(ctx context.Context, baseURL string, evs []jobbus.JobEvent) (int, error) {
	ids := make([]string, 0, len(evs))
	for _, e := range evs {
		if e.Status == jobbus.StatusActive || e.PrevStatus == jobbus.StatusActive {
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var n int
	if err := s.pool.QueryRow(ctx, noticesSQL, baseURL, ids).Scan(&n); err != nil {
		return 0, fmt.Errorf("queue indexing notices: %w", err)
	}
	return n, nil
}

// Round and SendFunc are indexbus's (NoticeStorer).
type (
	Round    = indexbus.Round
	SendFunc = indexbus.SendFunc
)

var _ indexbus.NoticeStorer = (*Store)(nil)

// Send runs one send round at now: it takes up to max due notices (fewer
// when the day's quota, dailyQuota notices a UTC day, has less room left),
// the oldest of each job first (a job's notices go in version order: a later
// one waits until the earlier has gone), sends them, and records the
// outcomes, a retry due after backoff(attempts). The quota row's lock makes
// the rounds of several workers take turns, so the day's count is exact;
// the claimed rows stay locked until their outcome is written, so a crash
// mid-round leaves them pending (sent again: at least once).
func (s *Store) Send(ctx context.Context, now time.Time, dailyQuota, max int, backoff func(int) time.Duration, send SendFunc) (Round, error) {
	var r Round
	day := now.UTC().Format(time.DateOnly)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var used int
		if _, err := tx.Exec(ctx, `INSERT INTO indexing_quota (day) VALUES ($1) ON CONFLICT DO NOTHING`, day); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT used FROM indexing_quota WHERE day = $1 FOR UPDATE`, day).Scan(&used); err != nil {
			return err
		}
		room := min(max, dailyQuota-used)
		if room <= 0 {
			return tx.QueryRow(ctx, `SELECT count(*) FROM indexing_notices WHERE status = 'pending' AND next_try_at <= $1`, now).Scan(&r.Waiting)
		}
		rows, err := tx.Query(ctx, `SELECT n.id, n.job_id, n.url, n.version, n.type, n.attempts FROM indexing_notices n
			WHERE n.status = 'pending' AND n.next_try_at <= $1
			  AND NOT EXISTS (SELECT FROM indexing_notices o WHERE o.job_id = n.job_id AND o.status = 'pending' AND o.id < n.id)
			ORDER BY n.id LIMIT $2 FOR UPDATE SKIP LOCKED`, now, room)
		if err != nil {
			return err
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (indexbus.Notice, error) {
			var n indexbus.Notice
			err := row.Scan(&n.ID, &n.JobID, &n.URL, &n.Version, &n.Type, &n.Attempts)
			return n, err
		})
		if err != nil || len(batch) == 0 {
			return err
		}
		if dailyQuota-used <= max { // the quota, not the batch size, bounds this round: what is due beyond it waits
			if err := tx.QueryRow(ctx, `SELECT greatest(count(*) - $2, 0) FROM indexing_notices WHERE status = 'pending' AND next_try_at <= $1`,
				now, len(batch)).Scan(&r.Waiting); err != nil {
				return err
			}
		}
		outs := send(ctx, batch)
		counted := 0
		for i, n := range batch {
			o := indexbus.Outcome{Retry: true, Err: "no answer"}
			if i < len(outs) {
				o = outs[i]
			}
			if o.Counted {
				counted++
			}
			var err error
			switch {
			case o.OK:
				r.Sent++
				_, err = tx.Exec(ctx, `UPDATE indexing_notices SET status = 'sent', attempts = attempts + 1, sent_at = $2, last_error = NULL
					WHERE id = $1`, n.ID, now)
			case o.Retry:
				r.Retried++
				_, err = tx.Exec(ctx, `UPDATE indexing_notices SET attempts = attempts + 1, last_error = $2, next_try_at = $3
					WHERE id = $1`, n.ID, o.Err, now.Add(backoff(n.Attempts)))
			default:
				r.Failed++
				_, err = tx.Exec(ctx, `UPDATE indexing_notices SET status = 'failed', attempts = attempts + 1, last_error = $2
					WHERE id = $1`, n.ID, o.Err)
			}
			if err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE indexing_quota SET used = used + $2 WHERE day = $1`, day, counted)
		return err
	})
	if err != nil {
		return Round{}, fmt.Errorf("send indexing notices: %w", err)
	}
	return r, nil
}

// Latest returns a job's latest notice; false when it has none.
func (s *Store) Latest(ctx context.Context, jobID int64) (indexbus.Announced, bool, error) {
	var a indexbus.Announced
	err := s.pool.QueryRow(ctx, `SELECT type, version, url, status, created_at, sent_at, last_error FROM indexing_notices
		WHERE job_id = $1 ORDER BY id DESC LIMIT 1`, jobID).Scan(&a.Type, &a.Version, &a.URL, &a.Status, &a.QueuedAt, &a.SentAt, &a.LastError)
	if errors.Is(err, pgx.ErrNoRows) {
		return indexbus.Announced{}, false, nil
	}
	if err != nil {
		return indexbus.Announced{}, false, fmt.Errorf("latest indexing notice: %w", err)
	}
	return a, true, nil
}

// Pool is the store's pool (tests read the tables).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
