// Package keydb stores API keys in the gateway schema.
package keydb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Store implements keybus.Storer with pgx.
type Store struct {
	pool *pgxpool.Pool
	q    querier // the pool, or the transaction of InTx
}

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: pool} }

// InTx runs fn on a store bound to one transaction (nested calls join it).
func (s *Store) InTx(ctx context.Context, fn func(keybus.Storer) error) error {
	if _, ok := s.q.(pgx.Tx); ok {
		return fn(s)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(&Store{pool: s.pool, q: tx})
	})
}

// LockOwner takes a transaction-scoped advisory lock named by the owner.
func (s *Store) LockOwner(ctx context.Context, o keybus.Owner) error {
	name := fmt.Sprintf("gateway.keys:%d:%d", o.SpaceID, o.CreatedBy)
	if _, err := s.q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, name); err != nil {
		return fmt.Errorf("lock owner: %w", err)
	}
	return nil
}

const columns = `id, name, prefix, hint, space_id, scopes, rate_limit_per_minute, trusted_importer,
	created_at, revoked_at, last_used_at, created_by_key_id, replaced_by, key_hash`

// row is the database model of a key.
type row struct {
	ID                 int64
	Name               string
	Prefix             string
	Hint               string
	SpaceID            *int64
	Scopes             []string
	RateLimitPerMinute *int32
	TrustedImporter    bool
	CreatedAt          time.Time
	RevokedAt          *time.Time
	LastUsedAt         *time.Time
	CreatedByKeyID     *int64
	ReplacedBy         *int64
	KeyHash            []byte
}

func (r row) toBus() keybus.Key {
	k := keybus.Key{
		ID: r.ID, Name: r.Name, Prefix: r.Prefix, Hint: r.Hint, Scopes: r.Scopes,
		TrustedImporter: r.TrustedImporter, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt,
		LastUsedAt: r.LastUsedAt, Hash: r.KeyHash,
	}
	if r.SpaceID != nil {
		k.SpaceID = *r.SpaceID
	}
	if r.RateLimitPerMinute != nil {
		k.RateLimitPerMinute = int(*r.RateLimitPerMinute)
	}
	if r.CreatedByKeyID != nil {
		k.CreatedByKeyID = *r.CreatedByKeyID
	}
	if r.ReplacedBy != nil {
		k.ReplacedBy = *r.ReplacedBy
	}
	return k
}

func scan(s pgx.Row) (keybus.Key, error) {
	var r row
	err := s.Scan(&r.ID, &r.Name, &r.Prefix, &r.Hint, &r.SpaceID, &r.Scopes, &r.RateLimitPerMinute,
		&r.TrustedImporter, &r.CreatedAt, &r.RevokedAt, &r.LastUsedAt, &r.CreatedByKeyID, &r.ReplacedBy, &r.KeyHash)
	if errors.Is(err, pgx.ErrNoRows) {
		return keybus.Key{}, keybus.ErrNotFound
	}
	if err != nil {
		return keybus.Key{}, err
	}
	return r.toBus(), nil
}

func nullable[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// Create inserts a key.
func (s *Store) Create(ctx context.Context, k keybus.Key) (keybus.Key, error) {
	var limit *int32
	if k.RateLimitPerMinute > 0 {
		v := int32(min(k.RateLimitPerMinute, math.MaxInt32)) //nolint:gosec // G115: bounded just above
		limit = &v
	}
	got, err := scan(s.q.QueryRow(ctx, `INSERT INTO api_keys
		(name, prefix, key_hash, hint, space_id, scopes, rate_limit_per_minute, trusted_importer, created_by_key_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+columns,
		k.Name, k.Prefix, k.Hash, k.Hint, nullable(k.SpaceID), k.Scopes, limit, k.TrustedImporter, nullable(k.CreatedByKeyID)))
	if err != nil {
		return keybus.Key{}, fmt.Errorf("insert key: %w", err)
	}
	return got, nil
}

// ByHash finds a key by the hash of its full string.
func (s *Store) ByHash(ctx context.Context, hash []byte) (keybus.Key, error) {
	return scan(s.q.QueryRow(ctx, `SELECT `+columns+` FROM api_keys WHERE key_hash = $1`, hash))
}

// ByID finds a key by id.
func (s *Store) ByID(ctx context.Context, id int64) (keybus.Key, error) {
	return scan(s.q.QueryRow(ctx, `SELECT `+columns+` FROM api_keys WHERE id = $1`, id))
}

// List returns all keys, oldest first.
func (s *Store) List(ctx context.Context) ([]keybus.Key, error) {
	return s.keys(ctx, `SELECT `+columns+` FROM api_keys ORDER BY id`)
}

// Owned lists an owner's keys, newest first.
func (s *Store) Owned(ctx context.Context, o keybus.Owner) ([]keybus.Key, error) {
	if o.SpaceID != 0 {
		return s.keys(ctx, `SELECT `+columns+` FROM api_keys WHERE space_id = $1 ORDER BY id DESC`, o.SpaceID)
	}
	return s.keys(ctx, `SELECT `+columns+` FROM api_keys WHERE space_id IS NULL AND created_by_key_id = $1 ORDER BY id DESC`, o.CreatedBy)
}

func (s *Store) keys(ctx context.Context, sql string, args ...any) ([]keybus.Key, error) {
	rows, err := s.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	out := []keybus.Key{}
	for rows.Next() {
		k, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan key: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Revoke sets revoked_at to at unless the key stops at or before at already.
func (s *Store) Revoke(ctx context.Context, id int64, at time.Time) (bool, error) {
	tag, err := s.q.Exec(ctx, `UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND (revoked_at IS NULL OR revoked_at > $2)`, id, at)
	if err != nil {
		return false, fmt.Errorf("revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.ByID(ctx, id); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// Replace records old's replacement and when old stops; a key already
// replaced or stopped is keybus.ErrRevoked (two rotations at once: one wins).
func (s *Store) Replace(ctx context.Context, old, replacement int64, stopsAt time.Time) error {
	tag, err := s.q.Exec(ctx, `UPDATE api_keys SET revoked_at = $3, replaced_by = $2
		WHERE id = $1 AND replaced_by IS NULL AND (revoked_at IS NULL OR revoked_at > now())`, old, replacement, stopsAt)
	if err != nil {
		return fmt.Errorf("replace key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return keybus.ErrRevoked
	}
	return nil
}

// AddEvent appends to the audit log.
func (s *Store) AddEvent(ctx context.Context, e keybus.Event) error {
	eff := e.EffectiveAt
	if eff.IsZero() {
		eff = time.Now()
	}
	_, err := s.q.Exec(ctx, `INSERT INTO key_events
		(key_id, space_id, owner_key_id, event, actor, actor_key_id, actor_email, actor_ip, replacement_id, effective_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.KeyID, nullable(e.SpaceID), nullable(e.OwnerKeyID), e.Event, e.Actor, nullable(e.ActorKeyID),
		nullable(e.Email), nullable(e.IP), nullable(e.ReplacementID), eff)
	if err != nil {
		return fmt.Errorf("insert key event: %w", err)
	}
	return nil
}

// Events lists an owner's key events newest first.
func (s *Store) Events(ctx context.Context, o keybus.Owner, before int64, limit int) ([]keybus.Event, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	where, arg := `space_id = $1`, o.SpaceID
	if o.SpaceID == 0 {
		where, arg = `space_id IS NULL AND owner_key_id = $1`, o.CreatedBy
	}
	rows, err := s.q.Query(ctx, `SELECT id, key_id, COALESCE(space_id, 0), COALESCE(owner_key_id, 0), event, actor,
		COALESCE(actor_key_id, 0), COALESCE(actor_email, ''), COALESCE(actor_ip, ''), COALESCE(replacement_id, 0),
		effective_at, occurred_at
		FROM key_events WHERE `+where+` AND id < $2 ORDER BY id DESC LIMIT $3`, arg, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list key events: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (keybus.Event, error) {
		var e keybus.Event
		err := r.Scan(&e.ID, &e.KeyID, &e.SpaceID, &e.OwnerKeyID, &e.Event, &e.Actor, &e.ActorKeyID, &e.Email, &e.IP,
			&e.ReplacementID, &e.EffectiveAt, &e.OccurredAt)
		return e, err
	})
}

// TouchLastUsed sets last_used_at for ids.
func (s *Store) TouchLastUsed(ctx context.Context, ids []int64, at time.Time) error {
	_, err := s.q.Exec(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = ANY($1)`, ids, at)
	if err != nil {
		return fmt.Errorf("touch keys: %w", err)
	}
	return nil
}
