// Package jobdb is the PostgreSQL store of the jobs schema.
package jobdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// PoolParams are the settings the store's connections need: a common term's
// bitmap must stay exact, not lossy (docs/search.md; make bench -growth, row
// b1 at 1 M jobs).
var PoolParams = map[string]string{"work_mem": "16MB"}

// Store implements every store of jobbus.Stores over a pool, or over one
// transaction.
type Store struct {
	pool *pgxpool.Pool
	// db is the pool, or the transaction of a store made by InTx.
	db jobsearch.DB
	// plans are the plans read in the last minute: every create and update
	// names one, and they change only when an operator edits the table
	// (make bench rows d and e2).
	plans *planCache
}

// New returns a store over pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, db: pool, plans: &planCache{m: map[int]cachedPlan{}}}
}

// On is the store reading through pool instead (a read replica's), with the
// same plan cache.
func (s *Store) On(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, db: pool, plans: s.plans}
}

// Pool is the store's pool (the primary's, unless made by On).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// DB is where the store's statements run: its pool or its transaction.
func (s *Store) DB() jobsearch.DB { return s.db }

// Stores are the store as each of the rules' storers.
func (s *Store) Stores() jobbus.Stores {
	return jobbus.Stores{Tx: s, Jobs: s, Idem: s, Lists: s, Batches: s, Events: s}
}

// InTx implements jobbus.Transactor.
func (s *Store) InTx(ctx context.Context, fn func(jobbus.Stores) error) error {
	return s.Tx(ctx, func(tx *Store) error { return fn(tx.Stores()) })
}

// Tx runs fn with the store bound to one transaction (nested: the same one).
func (s *Store) Tx(ctx context.Context, fn func(*Store) error) error {
	if _, ok := s.db.(pgx.Tx); ok {
		return fn(s)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(&Store{pool: s.pool, db: tx, plans: s.plans})
	})
}

// planTTL is how long a plan read is reused: an operator's edit of the plans
// table reaches every pod within it.
const planTTL = time.Minute

type planCache struct {
	mu sync.Mutex
	m  map[int]cachedPlan
}

type cachedPlan struct {
	p     jobbus.Plan
	found bool
	until time.Time
}

// Plan implements jobbus.JobStorer.
func (s *Store) Plan(ctx context.Context, id int) (jobbus.Plan, error) {
	now := time.Now()
	s.plans.mu.Lock()
	c, ok := s.plans.m[id]
	s.plans.mu.Unlock()
	if !ok || now.After(c.until) {
		c = cachedPlan{until: now.Add(planTTL), found: true}
		err := s.db.QueryRow(ctx, `SELECT id, name, price, currency, expiration_days, active FROM plans WHERE id = $1`, id).
			Scan(&c.p.ID, &c.p.Name, &c.p.Price, &c.p.Currency, &c.p.ExpirationDays, &c.p.Active)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			c = cachedPlan{until: c.until}
		case err != nil:
			return jobbus.Plan{}, fmt.Errorf("select plan: %w", err)
		}
		s.plans.mu.Lock()
		if _, known := s.plans.m[id]; known || len(s.plans.m) < maxCachedPlans {
			s.plans.m[id] = c
		}
		s.plans.mu.Unlock()
	}
	if !c.found {
		return jobbus.Plan{}, jobbus.ErrNotFound
	}
	return c.p, nil
}

// maxCachedPlans bounds the cache: a client naming ever new id_plan values
// must not grow it.
const maxCachedPlans = 64

// StoredResponse implements jobbus.IdempotencyStorer.
func (s *Store) StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	return storedResponse(ctx, s.db, keyID, key, since)
}

// ClaimIdempotency implements jobbus.IdempotencyStorer: a transaction-scoped advisory
// lock, then the key's expired record (if any) goes.
func (s *Store) ClaimIdempotency(ctx context.Context, keyID int64, key string, since time.Time) (bool, error) {
	var locked bool
	if err := s.db.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, lockKey(keyID, key)).Scan(&locked); err != nil {
		return false, fmt.Errorf("lock idempotency key: %w", err)
	}
	if !locked {
		return false, nil
	}
	if _, err := s.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2 AND created_at <= $3`,
		keyID, key, since); err != nil {
		return false, fmt.Errorf("delete expired idempotency key: %w", err)
	}
	return true, nil
}

// SaveResponse implements jobbus.IdempotencyStorer.
func (s *Store) SaveResponse(ctx context.Context, idem jobbus.Idempotency, status int, body []byte, jobID int64) error {
	if _, err := s.db.Exec(ctx, `INSERT INTO idempotency_keys (key_id, idem_key, request_hash, response_status, response_body, job_id)
		VALUES ($1, $2, $3, $4, $5, $6)`, idem.KeyID, idem.Key, idem.RequestHash, status, body, jobID); err != nil {
		if pg.IsUniqueViolation(err) {
			return jobbus.ErrInFlight
		}
		return fmt.Errorf("insert idempotency key: %w", err)
	}
	return nil
}

func storedResponse(ctx context.Context, q jobsearch.DB, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	var r jobbus.StoredResponse
	err := q.QueryRow(ctx, `SELECT request_hash, response_status, response_body, created_at, EXISTS (SELECT FROM unannounced)
		FROM idempotency_keys WHERE key_id = $1 AND idem_key = $2 AND created_at > $3`, keyID, key, since).
		Scan(&r.RequestHash, &r.Status, &r.Body, &r.CreatedAt, &r.Owed)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.StoredResponse{}, jobbus.ErrNotFound
	}
	if err != nil {
		return jobbus.StoredResponse{}, fmt.Errorf("select idempotency key: %w", err)
	}
	return r, nil
}

// lockKey maps an (API key, Idempotency-Key) pair to an advisory lock id.
func lockKey(keyID int64, key string) int64 {
	h := fnv.New64a()
	_, _ = h.Write(strconv.AppendInt(nil, keyID, 10))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return int64(h.Sum64())
}

// List implements jobbus.ListStorer.
func (s *Store) List(ctx context.Context, f jobbus.ListFilter) (jobbus.JobRows, error) {
	return jobsearch.List(ctx, s.db, f)
}

// Page implements jobbus.ListStorer.
func (s *Store) Page(ctx context.Context, f jobbus.ListFilter) ([]jobbus.Job, int, error) {
	return jobsearch.Page(ctx, s.db, f)
}

// Feed implements jobbus.ListStorer.
func (s *Store) Feed(ctx context.Context, f jobbus.ListFilter) ([]jobbus.Job, time.Time, error) {
	return jobsearch.Latest(ctx, s.db, f)
}
