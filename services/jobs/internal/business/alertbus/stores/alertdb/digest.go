package alertdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// digestSQL takes, at $1, up to $2 due digest alerts (locked, SKIP LOCKED so
// two ticks never take one alert): their pairs unsent and still visible at
// $1 are marked sent at $1, one digest mail per alert with any is queued,
// and each alert's next digest is moved past $1, in one statement: a
// repeated tick finds nothing due, and a pair once marked is never taken
// again. A pair of a job paused, closed or expired by $1 stays unsent (a
// later digest takes it if the job is visible again then).
const digestSQL = `WITH due AS (
	SELECT id, frequency, time_zone FROM alerts
	WHERE next_digest_at <= $1 AND confirmed_at IS NOT NULL AND NOT paused AND frequency IN ('daily', 'weekly')
	ORDER BY next_digest_at, id LIMIT $2 FOR UPDATE SKIP LOCKED),
taken AS (
	UPDATE alert_matches m SET sent_at = $1 FROM due, jobs j
	WHERE m.alert_id = due.id AND m.sent_at IS NULL AND j.id = m.job_id AND j.status = 'active' AND j.expiration_date > $1
	RETURNING m.alert_id),
queued AS (
	INSERT INTO alert_outbox (alert_id, kind, digest_at) SELECT DISTINCT alert_id, 'digest', $1::timestamptz FROM taken
	RETURNING alert_id),
moved AS (
	UPDATE alerts a SET next_digest_at = alert_next_digest(due.frequency, due.time_zone, $1) FROM due WHERE a.id = due.id
	RETURNING a.id)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM queued)`

// TakeDigests runs the digest clock's tick at (the workflow's time, not the
// wall clock's): the confirmed daily and weekly alerts without a next
// digest get one (their first local morning after at), then the alerts due
// by at are taken, limit at a time, until none is left. It reports the
// alerts taken and the digest mails queued (an alert with nothing visible
// to tell gets no mail).
func (s *Store) TakeDigests(ctx context.Context, at time.Time, limit int) (alerts, digests int, err error) {
	if _, err := s.pool.Exec(ctx, `UPDATE alerts SET next_digest_at = alert_next_digest(frequency, time_zone, $1)
		WHERE next_digest_at IS NULL AND confirmed_at IS NOT NULL AND NOT paused AND frequency IN ('daily', 'weekly')`, at); err != nil {
		return 0, 0, fmt.Errorf("schedule digests: %w", err)
	}
	for {
		var a, d int
		if err := s.pool.QueryRow(ctx, digestSQL, at, limit).Scan(&a, &d); err != nil {
			return alerts, digests, fmt.Errorf("take digests: %w", err)
		}
		alerts, digests = alerts+a, digests+d
		if a < limit {
			return alerts, digests, nil
		}
	}
}

// NextDigest is when an alert's next digest is due (nil: none scheduled).
func (s *Store) NextDigest(ctx context.Context, id int64) (*time.Time, error) {
	var at *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT next_digest_at FROM alerts WHERE id = $1`, id).Scan(&at); err != nil {
		return nil, fmt.Errorf("next digest: %w", err)
	}
	return at, nil
}

// DigestJobs are the jobs of the digest of alert marked at, still visible
// now (a job paused since is left out), newest match first, at most limit.
func (s *Store) DigestJobs(ctx context.Context, alertID int64, at time.Time, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.job_id FROM alert_matches m JOIN jobs j ON j.id = m.job_id
		WHERE m.alert_id = $1 AND m.sent_at = $2 AND j.status = 'active' AND j.expiration_date > now()
		ORDER BY m.matched_at DESC, m.job_id DESC LIMIT $3`, alertID, at, limit)
	if err != nil {
		return nil, fmt.Errorf("select digest jobs: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
