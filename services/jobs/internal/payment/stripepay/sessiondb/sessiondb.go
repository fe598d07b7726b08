// Package sessiondb keeps each job's open Stripe Checkout Session in the jobs
// schema (stripe_checkout_sessions): stripepay.Sessions on PostgreSQL.
package sessiondb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/stripepay"
)

// Store is stripepay.Sessions on the jobs database.
type Store struct {
	pool *pgxpool.Pool
}

var _ stripepay.Sessions = (*Store)(nil)

// New is the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Lock implements stripepay.Sessions with a transaction-scoped advisory lock
// per job, held while fn calls Stripe: two tabs starting the same job's
// payment at once open one session between them. Starts of other jobs never
// wait for it.
func (s *Store) Lock(ctx context.Context, jobID int64, fn func(cur *stripepay.OpenSession) (*stripepay.OpenSession, error)) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('coworkjobs.stripe_checkout:' || $1::bigint, 0))`, jobID); err != nil {
			return fmt.Errorf("lock checkout session of job %d: %w", jobID, err)
		}
		var cur stripepay.OpenSession
		err := tx.QueryRow(ctx, `SELECT session_id, url, expires_at, amount, currency FROM stripe_checkout_sessions WHERE job_id = $1`,
			jobID).Scan(&cur.ID, &cur.URL, &cur.ExpiresAt, &cur.Amount, &cur.Currency)
		var found *stripepay.OpenSession
		switch {
		case err == nil:
			found = &cur
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read checkout session of job %d: %w", jobID, err)
		}
		next, err := fn(found)
		if err != nil || next == nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO stripe_checkout_sessions (job_id, session_id, url, expires_at, amount, currency)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (job_id) DO UPDATE SET session_id = excluded.session_id, url = excluded.url,
				expires_at = excluded.expires_at, amount = excluded.amount, currency = excluded.currency, created_at = now()`,
			jobID, next.ID, next.URL, next.ExpiresAt, next.Amount, next.Currency); err != nil {
			return fmt.Errorf("store checkout session %s of job %d: %w", next.ID, jobID, err)
		}
		return nil
	})
}

// Forget implements stripepay.Sessions.
func (s *Store) Forget(ctx context.Context, jobID int64, sessionID string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM stripe_checkout_sessions WHERE job_id = $1 AND session_id = $2`, jobID, sessionID); err != nil {
		return fmt.Errorf("forget checkout session %s of job %d: %w", sessionID, jobID, err)
	}
	return nil
}
