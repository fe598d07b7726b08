// Package dashdb stores the dashboard's sign-in links, their mails' outbox
// and sessions in the gateway schema.
package dashdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
)

// Store implements dashbus.Storer with pgx.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// CountSignIns implements dashbus.Storer.
func (s *Store) CountSignIns(ctx context.Context, email string, since time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dashboard_sign_ins WHERE email = $1 AND created_at >= $2`, email, since).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sign-ins: %w", err)
	}
	return n, nil
}

// AddSignIn implements dashbus.Storer: the link and its mail in one statement.
func (s *Store) AddSignIn(ctx context.Context, in dashbus.SignIn) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `WITH l AS (
		INSERT INTO dashboard_sign_ins (email, nonce, token_hash, client_ip, expires_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id)
		INSERT INTO dashboard_mail_outbox (sign_in_id) SELECT id FROM l RETURNING sign_in_id`,
		in.Email, in.Nonce, in.TokenHash, in.ClientIP, in.ExpiresAt).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert sign-in: %w", err)
	}
	return id, nil
}

const signInColumns = `id, email, nonce, token_hash, coalesce(client_ip, ''), created_at, expires_at, used_at`

func scanSignIn(r pgx.Row) (dashbus.SignIn, error) {
	var s dashbus.SignIn
	err := r.Scan(&s.ID, &s.Email, &s.Nonce, &s.TokenHash, &s.ClientIP, &s.CreatedAt, &s.ExpiresAt, &s.UsedAt)
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
	return scanSignIn(s.pool.QueryRow(ctx, `SELECT `+signInColumns+` FROM dashboard_sign_ins WHERE id = $1`, id))
}

// SignInByHash implements dashbus.Storer.
func (s *Store) SignInByHash(ctx context.Context, hash []byte) (dashbus.SignIn, error) {
	return scanSignIn(s.pool.QueryRow(ctx, `SELECT `+signInColumns+` FROM dashboard_sign_ins WHERE token_hash = $1`, hash))
}

// UseSignIn implements dashbus.Storer: the link is used and the session
// stored in one statement, only while the link is unused and unexpired.
func (s *Store) UseSignIn(ctx context.Context, id int64, at time.Time, sess dashbus.Session) (bool, error) {
	tag, err := s.pool.Exec(ctx, `WITH l AS (
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
	err := s.pool.QueryRow(ctx, `SELECT id, token_hash, email, csrf, coalesce(client_ip, ''), created_at, expires_at, revoked_at
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
	if _, err := s.pool.Exec(ctx, `UPDATE dashboard_sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("revoke session: %w", err)
	}
	return nil
}

// Purge implements dashbus.Storer.
func (s *Store) Purge(ctx context.Context, before time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM dashboard_sign_ins WHERE expires_at < $1`, before); err != nil {
		return fmt.Errorf("purge sign-ins: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM dashboard_sessions WHERE expires_at < $1 OR revoked_at < $1`, before); err != nil {
		return fmt.Errorf("purge sessions: %w", err)
	}
	return nil
}

// MailOutbox is dashboard_mail_outbox for outbox.Relay: the id of the
// sign-in whose mail is due.
func (s *Store) MailOutbox() outbox.Table[int64] {
	return outbox.Table[int64]{DB: s.pool, Name: "dashboard_mail_outbox", Due: "next_try_at",
		Columns: []string{"sign_in_id"}, Payload: func(id *int64) []any { return []any{id} }}
}
