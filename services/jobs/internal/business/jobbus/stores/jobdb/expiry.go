package jobdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// ExpireIfDue expires a job whose expiration date has passed when the
// lifecycle lets the expiry move its state (jobbus.ExpiryMoves). When
// the job is not due yet it reports its current expiration date (it may have
// moved) so that the caller re-arms its timer; found is false for no job.
func (s *Store) ExpireIfDue(ctx context.Context, jobID int64) (expired bool, status string, expiresAt time.Time, found bool, err error) {
	from, to := jobbus.ExpiryMoves()
	err = s.pool.QueryRow(ctx, `WITH due AS (
		SELECT id, status FROM jobs WHERE id = $1 AND status = ANY($2) AND expiration_date <= now() FOR UPDATE
	)`+expireSQL+`SELECT status, expiration_date FROM x`, jobID, from, to).Scan(&status, &expiresAt)
	if err == nil {
		return true, status, expiresAt, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", time.Time{}, false, fmt.Errorf("expire job: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT status, expiration_date FROM jobs WHERE id = $1`, jobID).Scan(&status, &expiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, "", time.Time{}, false, nil
	}
	if err != nil {
		return false, "", time.Time{}, false, fmt.Errorf("select job: %w", err)
	}
	return false, status, expiresAt, true, nil
}

// expireSQL follows a CTE due (id, status) of the locked jobs to expire:
// each gets status $3 and its job.expired event, in the same statement,
// whose final SELECT reads x (the expired jobs).
const expireSQL = `, x AS (
		UPDATE jobs j SET status = $3, updated_at = now(), version = j.version + 1 FROM due WHERE j.id = due.id
		RETURNING j.id, j.status, j.expiration_date, j.version, j.space_id, j.key_id, due.status AS prev
	), events AS (
		INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
		SELECT id, 'job.expired', version, status, prev, space_id, key_id FROM x
	)
	`

// ExpireOverdue expires up to limit active jobs past their expiration date
// (the sweep) and reports how many it expired.
func (s *Store) ExpireOverdue(ctx context.Context, limit int) (int, error) {
	from, to := jobbus.ExpiryMoves()
	var n int
	err := s.pool.QueryRow(ctx, `WITH due AS (
		SELECT id, status FROM jobs WHERE status = ANY($2) AND expiration_date <= now()
		ORDER BY expiration_date LIMIT $1 FOR UPDATE SKIP LOCKED
	)`+expireSQL+`SELECT count(*) FROM x`, limit, from, to).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("expire overdue jobs: %w", err)
	}
	return n, nil
}

var (
	_ jobbus.ExpiryStorer = (*Store)(nil)
	_ jobbus.OutboxStorer = (*Store)(nil)
)

// OutboxTable is expiry_outbox for outbox.Relay. A job's intents keep their
// order: its timer ends at the date written last.
func (s *Store) OutboxTable() outbox.Table[jobbus.OutboxItem] {
	return outbox.Table[jobbus.OutboxItem]{DB: s.pool, Name: "expiry_outbox", Due: "next_try_at",
		Columns: []string{"job_id", "kind", "expires_at"},
		Payload: func(it *jobbus.OutboxItem) []any { return []any{&it.JobID, &it.Kind, &it.ExpiresAt} },
		Key:     func(it jobbus.OutboxItem) string { return strconv.FormatInt(it.JobID, 10) }}
}

// PurgeIdempotencyKeys deletes up to limit idempotency records created before cutoff.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE ctid IN
		(SELECT ctid FROM idempotency_keys WHERE created_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
