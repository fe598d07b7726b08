// Package keydb stores API keys in the gateway schema.
package keydb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Store implements keybus.Storer with pgx.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `id, name, prefix, hint, space_id, scopes, rate_limit_per_minute, trusted_importer,
	created_at, revoked_at, last_used_at, key_hash`

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
	return k
}

func scan(s pgx.Row) (keybus.Key, error) {
	var r row
	err := s.Scan(&r.ID, &r.Name, &r.Prefix, &r.Hint, &r.SpaceID, &r.Scopes, &r.RateLimitPerMinute,
		&r.TrustedImporter, &r.CreatedAt, &r.RevokedAt, &r.LastUsedAt, &r.KeyHash)
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

type execer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func insert(ctx context.Context, q execer, k keybus.Key) (keybus.Key, error) {
	var limit *int32
	if k.RateLimitPerMinute > 0 {
		v := int32(k.RateLimitPerMinute)
		limit = &v
	}
	got, err := scan(q.QueryRow(ctx, `INSERT INTO api_keys
		(name, prefix, key_hash, hint, space_id, scopes, rate_limit_per_minute, trusted_importer)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+columns,
		k.Name, k.Prefix, k.Hash, k.Hint, nullable(k.SpaceID), k.Scopes, limit, k.TrustedImporter))
	if err != nil {
		return keybus.Key{}, fmt.Errorf("insert key: %w", err)
	}
	return got, nil
}

// Create inserts a key.
func (s *Store) Create(ctx context.Context, k keybus.Key) (keybus.Key, error) {
	return insert(ctx, s.pool, k)
}

// ByHash finds a key by the hash of its full string.
func (s *Store) ByHash(ctx context.Context, hash []byte) (keybus.Key, error) {
	return scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM api_keys WHERE key_hash = $1`, hash))
}

// ByID finds a key by id.
func (s *Store) ByID(ctx context.Context, id int64) (keybus.Key, error) {
	return scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM api_keys WHERE id = $1`, id))
}

// List returns all keys, newest first.
func (s *Store) List(ctx context.Context) ([]keybus.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM api_keys ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []keybus.Key
	for rows.Next() {
		k, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("scan key: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Revoke marks a key revoked (idempotent: the first revocation time stays).
func (s *Store) Revoke(ctx context.Context, id int64, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, at)
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return keybus.ErrNotFound
	}
	return nil
}

// Rotate revokes old and inserts its replacement in one transaction.
func (s *Store) Rotate(ctx context.Context, old int64, replacement keybus.Key, at time.Time) (keybus.Key, error) {
	var out keybus.Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		k, err := insert(ctx, tx, replacement)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = $2, replaced_by = $3 WHERE id = $1 AND revoked_at IS NULL`, old, at, k.ID)
		if err != nil {
			return fmt.Errorf("revoke old key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return keybus.ErrRevoked
		}
		out = k
		return nil
	})
	return out, err
}

// TouchLastUsed sets last_used_at for ids.
func (s *Store) TouchLastUsed(ctx context.Context, ids []int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = ANY($1)`, ids, at)
	if err != nil {
		return fmt.Errorf("touch keys: %w", err)
	}
	return nil
}
