package jobdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// ExpireIfDue expires a job whose expiration date has passed when the
// lifecycle lets the expiry move its state (jobbus.ExpiryMoves). When
// the job is not due yet it reports its current expiration date (it may have
// moved) so that the caller re-arms its timer; found is false for no job.
func (s *Store) ExpireIfDue(ctx context.Context, jobID int64) (expired bool, status string, expiresAt time.Time, found bool, err error) {
	from, to := jobbus.ExpiryMoves()
	err = s.pool.QueryRow(ctx, `UPDATE jobs SET status = $3, updated_at = now()
		WHERE id = $1 AND status = ANY($2) AND expiration_date <= now()
		RETURNING status, expiration_date`, jobID, from, to).Scan(&status, &expiresAt)
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

// ExpireOverdue expires up to limit active jobs past their expiration date
// (the sweep) and reports how many it expired.
func (s *Store) ExpireOverdue(ctx context.Context, limit int) (int, error) {
	from, to := jobbus.ExpiryMoves()
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET status = $3, updated_at = now()
		WHERE id IN (SELECT id FROM jobs WHERE status = ANY($2) AND expiration_date <= now()
		             ORDER BY expiration_date LIMIT $1 FOR UPDATE SKIP LOCKED)`, limit, from, to)
	if err != nil {
		return 0, fmt.Errorf("expire overdue jobs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// relayConcurrency bounds the sends in flight of one relay round.
const relayConcurrency = 8

// Outbox kinds: an expiry intent moves the job's timer, a creation mail
// starts the poster's mail.
const (
	KindExpiry      = "expiry"
	KindCreatedMail = "created_mail"
)

// OutboxItem is one intent of the outbox.
type OutboxItem struct {
	ID        int64
	JobID     int64
	Kind      string
	ExpiresAt time.Time
	Attempts  int
}

// RelayOutbox locks up to n due expiry intents (other relays skip them),
// hands each to send, deletes those sent and backs off the others, all in
// one transaction. It reports how many were sent and how many failed.
func (s *Store) RelayOutbox(ctx context.Context, n int, send func(context.Context, OutboxItem) error) (sent, failed int, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT id, job_id, kind, expires_at, attempts FROM expiry_outbox
		WHERE next_try_at <= now() ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, n)
	if err != nil {
		return 0, 0, fmt.Errorf("select outbox: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxItem, error) {
		var it OutboxItem
		return it, r.Scan(&it.ID, &it.JobID, &it.Kind, &it.ExpiresAt, &it.Attempts)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("scan outbox: %w", err)
	}
	// The first intent probes the target alone, so that a Temporal outage
	// costs one timeout per round rather than one per intent. Once it has
	// answered, the rest go out concurrently: one at a time, the relay falls
	// behind a burst of creates.
	type failure struct {
		it  OutboxItem
		err error
	}
	var done []int64
	var failures []failure
	if len(items) > 0 {
		if serr := send(ctx, items[0]); serr != nil {
			failures = append(failures, failure{items[0], serr})
			items = nil
		} else {
			done = append(done, items[0].ID)
			items = items[1:]
		}
	}
	errs := make([]error, len(items))
	sem := make(chan struct{}, relayConcurrency)
	var wg sync.WaitGroup
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = send(ctx, it)
		}()
	}
	wg.Wait()
	for i, it := range items {
		if errs[i] != nil {
			failures = append(failures, failure{it, errs[i]})
			continue
		}
		done = append(done, it.ID)
	}
	for _, f := range failures {
		// exponential back-off, capped at five minutes
		backoff := time.Second << min(f.it.Attempts, 8)
		if backoff > 5*time.Minute {
			backoff = 5 * time.Minute
		}
		msg := f.err.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		if _, err := tx.Exec(ctx, `UPDATE expiry_outbox SET attempts = attempts + 1, last_error = $2,
			next_try_at = now() + $3::interval WHERE id = $1`, f.it.ID, msg, backoff.String()); err != nil {
			return 0, 0, fmt.Errorf("back off outbox: %w", err)
		}
	}
	failed = len(failures)
	if len(done) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM expiry_outbox WHERE id = ANY($1)`, done); err != nil {
			return 0, 0, fmt.Errorf("delete outbox: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("commit outbox: %w", err)
	}
	return len(done), failed, nil
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
