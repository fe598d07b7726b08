// Package dashdb stores the dashboard's sign-in links, their mails' outbox
// and sessions in the gateway schema.
package dashdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
)

// Store implements dashbus.Storer with pgx.
type Store struct {
	pool *pgxpool.Pool
	q    querier // the pool, or the transaction of InTx
}

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: pool} }

// InTx implements dashbus.Storer (nested calls join the transaction).
func (s *Store) InTx(ctx context.Context, fn func(dashbus.Storer) error) error {
	if _, ok := s.q.(pgx.Tx); ok {
		return fn(s)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(&Store{pool: s.pool, q: tx})
	})
}

// LockAddress implements dashbus.Storer: a transaction-scoped advisory lock.
func (s *Store) LockAddress(ctx context.Context, email string) error {
	if _, err := s.q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('gateway.sign-in:' || $1, 0))`, email); err != nil {
		return fmt.Errorf("lock address: %w", err)
	}
	return nil
}

// CountRequests implements dashbus.Storer.
func (s *Store) CountRequests(ctx context.Context, email, client string, since time.Time) (int, error) {
	var n int
	err := s.q.QueryRow(ctx, `SELECT count(*) FROM dashboard_sign_in_requests
		WHERE email = $1 AND client_ip = $2 AND requested_at >= $3`, email, client, since).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sign-in requests: %w", err)
	}
	return n, nil
}

// AddRequest implements dashbus.Storer.
func (s *Store) AddRequest(ctx context.Context, email, client string, at time.Time) error {
	if _, err := s.q.Exec(ctx, `INSERT INTO dashboard_sign_in_requests (email, client_ip, requested_at) VALUES ($1, $2, $3)`,
		email, client, at); err != nil {
		return fmt.Errorf("insert sign-in request: %w", err)
	}
	return nil
}

// Outstanding implements dashbus.Storer.
func (s *Store) Outstanding(ctx context.Context, email string, until time.Time) (dashbus.SignIn, error) {
	return scanSignIn(s.q.QueryRow(ctx, `SELECT `+signInColumns+` FROM dashboard_sign_ins
		WHERE email = $1 AND used_at IS NULL AND expires_at >= $2 ORDER BY id DESC LIMIT 1`, email, until))
}

// LastMailed implements dashbus.Storer.
func (s *Store) LastMailed(ctx context.Context, email string) (time.Time, error) {
	var at *time.Time
	if err := s.q.QueryRow(ctx, `SELECT max(mailed_at) FROM dashboard_sign_ins WHERE email = $1`, email).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("last sign-in mail: %w", err)
	}
	if at == nil {
		return time.Time{}, nil
	}
	return *at, nil
}

// AddSignIn implements dashbus.Storer: the link and its mail in one statement.
func (s *Store) AddSignIn(ctx context.Context, in dashbus.SignIn) (int64, error) {
	var id int64
	err := s.q.QueryRow(ctx, `WITH l AS (
		INSERT INTO dashboard_sign_ins (email, nonce, token_hash, client_ip, created_at, expires_at, mailed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id)
		INSERT INTO dashboard_mail_outbox (sign_in_id) SELECT id FROM l RETURNING sign_in_id`,
		in.Email, in.Nonce, in.TokenHash, in.ClientIP, in.CreatedAt, in.ExpiresAt, in.MailedAt).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert sign-in: %w", err)
	}
	return id, nil
}

// Resend implements dashbus.Storer: the link's mail queued again.
func (s *Store) Resend(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.q.Exec(ctx, `WITH l AS (UPDATE dashboard_sign_ins SET mailed_at = $2 WHERE id = $1 RETURNING id)
		INSERT INTO dashboard_mail_outbox (sign_in_id) SELECT id FROM l`, id, at); err != nil {
		return fmt.Errorf("resend sign-in: %w", err)
	}
	return nil
}

const signInColumns = `id, email, nonce, token_hash, coalesce(client_ip, ''), created_at, expires_at, used_at, mailed_at`

func scanSignIn(r pgx.Row) (dashbus.SignIn, error) {
	var s dashbus.SignIn
	err := r.Scan(&s.ID, &s.Email, &s.Nonce, &s.TokenHash, &s.ClientIP, &s.CreatedAt, &s.ExpiresAt, &s.UsedAt, &s.MailedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return dashbus.SignIn{}, dashbus.ErrNotFound
	}
	if err != nil {
		return dashbus.SignIn{}, fmt.Errorf("select sign-in: %w", err)
	}
	return s, nil
}

// SignInByID implements dashbus.Storer.
func (s *Store) SignInByID(ctx context.Context, id int64) (dashbus.SignIn, error) {
	return scanSignIn(s.q.QueryRow(ctx, `SELECT `+signInColumns+` FROM dashboard_sign_ins WHERE id = $1`, id))
}

// SignInByHash implements dashbus.Storer.
func (s *Store) SignInByHash(ctx context.Context, hash []byte) (dashbus.SignIn, error) {
	return scanSignIn(s.q.QueryRow(ctx, `SELECT `+signInColumns+` FROM dashboard_sign_ins WHERE token_hash = $1`, hash))
}

// UseSignIn implements dashbus.Storer: the link is used and the session
// stored in one statement, only while the link is unused and unexpired.
func (s *Store) UseSignIn(ctx context.Context, id int64, at time.Time, sess dashbus.Session) (bool, error) {
	tag, err := s.q.Exec(ctx, `WITH l AS (
		UPDATE dashboard_sign_ins SET used_at = $2 WHERE id = $1 AND used_at IS NULL AND expires_at > $2 RETURNING id)
		INSERT INTO dashboard_sessions (token_hash, email, csrf, client_ip, created_at, expires_at)
		SELECT $3, $4, $5, $6, $2, $7 FROM l`,
		id, at, sess.TokenHash, sess.Email, sess.CSRF, sess.ClientIP, sess.ExpiresAt)
	if err != nil {
		return false, fmt.Errorf("use sign-in: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// SessionByHash implements dashbus.Storer.
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (dashbus.Session, error) {
	var x dashbus.Session
	err := s.q.QueryRow(ctx, `SELECT id, token_hash, email, csrf, coalesce(client_ip, ''), created_at, expires_at, revoked_at
		FROM dashboard_sessions WHERE token_hash = $1`, hash).
		Scan(&x.ID, &x.TokenHash, &x.Email, &x.CSRF, &x.ClientIP, &x.CreatedAt, &x.ExpiresAt, &x.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return dashbus.Session{}, dashbus.ErrNotFound
	}
	if err != nil {
		return dashbus.Session{}, fmt.Errorf("select session: %w", err)
	}
	return x, nil
}

// RevokeSession implements dashbus.Storer.
func (s *Store) RevokeSession(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.q.Exec(ctx, `UPDATE dashboard_sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// Purge implements dashbus.Storer.
func (s *Store) Purge(ctx context.Context, before time.Time) error {
	if _, err := s.q.Exec(ctx, `DELETE FROM dashboard_sign_ins WHERE expires_at < $1`, before); err != nil {
		return fmt.Errorf("purge sign-ins: %w", err)
	}
	if _, err := s.q.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at < $1 OR revoked_at < $1`, before); err != nil {
		return fmt.Errorf("purge sessions: %w", err)
	}
	if _, err := s.q.Exec(ctx, `DELETE FROM dashboard_sign_in_requests WHERE requested_at < $1`, before); err != nil {
		return fmt.Errorf("purge sign-in requests: %w", err)
	}
	return nil
}

// MailOutbox is dashboard_mail_outbox for outbox.Relay: the id of the
// sign-in whose mail is due.
func (s *Store) MailOutbox() outbox.Table[int64] {
	return outbox.Table[int64]{DB: s.pool, Name: "dashboard_mail_outbox", Due: "next_try_at",
		Columns: []string{"sign_in_id"}, Payload: func(id *int64) []any { return []any{id} }}
}
