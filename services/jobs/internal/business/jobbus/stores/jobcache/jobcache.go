// Package jobcache is the read machinery of the jobs store, as a decorator
// of it (jobbus.Stores over jobdb): it announces every committed write to
// the caches (the change versions the gateway names its answers by, bumped
// after commit and before the write is acknowledged), routes reads to a
// read replica once it has replayed the reader's own writes, and keeps
// listings' totals as memos under the change versions. The rules above it
// never see any of this.
package jobcache

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

// Config says what the store may use.
type Config struct {
	// Changes are bumped after every write (nil: none, as without REDIS_URL,
	// and no totals are kept).
	Changes *changes.Versions
	// Reads routes reads to the replica of DATABASE_READ_URL (nil: none).
	Reads *pg.Reads
	// TotalsMemo keeps listings' totals under Changes (totals.go).
	TotalsMemo bool
}

// Store implements every store of jobbus.Stores over the PostgreSQL store.
type Store struct {
	db  *jobdb.Store
	cfg Config
	// routing sends the reads that may lag to the replica (libs/pg's shell).
	routing pg.Store
	totals  *totals
	// pending holds, in a transaction, what its commit must announce.
	pending *pending
	// owed and settled count announcements owed while Redis was away and
	// settled after (jobs_announcements_*_total); shared by the store's
	// transactions.
	owed, settled *atomic.Int64
}

// New returns the store over db.
func New(db *jobdb.Store, cfg Config) *Store {
	return &Store{db: db, cfg: cfg, routing: pg.NewStore(db.Pool()).WithReads(cfg.Reads), totals: &totals{},
		owed: &atomic.Int64{}, settled: &atomic.Int64{}}
}

// Stores are the store as each of the rules' storers.
func (s *Store) Stores() jobbus.Stores {
	return jobbus.Stores{Tx: s, Jobs: s, Idem: s, Lists: s, Batches: s, Events: s}
}

// InTx implements jobbus.Transactor: what the transaction writes is
// announced once it has committed, before InTx returns.
func (s *Store) InTx(ctx context.Context, fn func(jobbus.Stores) error) error {
	if s.pending != nil {
		return fn(s.Stores())
	}
	p := &pending{}
	err := s.db.Tx(ctx, func(tx *jobdb.Store) error {
		return fn((&Store{db: tx, cfg: s.cfg, routing: s.routing, totals: s.totals, pending: p, owed: s.owed, settled: s.settled}).Stores())
	})
	if err != nil {
		return err
	}
	return s.announce(ctx, p)
}

// Plan implements jobbus.JobStorer.
func (s *Store) Plan(ctx context.Context, id int) (jobbus.Plan, error) { return s.db.Plan(ctx, id) }

// Upsert implements jobbus.JobStorer: a row written is announced, and so is
// any earlier write still owed (an unchanged re-post may be its retry).
func (s *Store) Upsert(ctx context.Context, nj jobbus.NewJob) (jobbus.Written, error) {
	w, err := s.db.Upsert(ctx, nj)
	if err != nil {
		return w, err
	}
	p := pending{owed: w.Owed}
	if w.Wrote {
		p.add(nj.KeyID, nj.SpaceID)
	}
	return w, s.settle(ctx, p)
}

// Apply implements jobbus.JobStorer.
func (s *Store) Apply(ctx context.Context, c jobbus.Change) (jobbus.Detail, error) {
	d, err := s.db.Apply(ctx, c)
	if err != nil {
		return d, err
	}
	var p pending
	p.add(0, d.SpaceID)
	return d, s.settle(ctx, p)
}

// Edit implements jobbus.JobStorer.
func (s *Store) Edit(ctx context.Context, id int64, e jobbus.Edited) (jobbus.Detail, error) {
	d, err := s.db.Edit(ctx, id, e)
	if err != nil {
		return d, err
	}
	var p pending
	p.add(0, d.SpaceID)
	return d, s.settle(ctx, p)
}

// RecordPayment implements jobbus.JobStorer.
func (s *Store) RecordPayment(ctx context.Context, pay jobbus.Payment, action string) (bool, error) {
	return s.db.RecordPayment(ctx, pay, action)
}

// QueryByHash implements jobbus.JobStorer.
func (s *Store) QueryByHash(ctx context.Context, hash string) (jobbus.Detail, error) {
	return s.db.QueryByHash(ctx, hash)
}

// QueryBySpace implements jobbus.JobStorer, on the primary: the dashboard
// shows what the owner just did.
func (s *Store) QueryBySpace(ctx context.Context, spaceID int64, limit int) ([]jobbus.Detail, error) {
	return s.db.QueryBySpace(ctx, spaceID, limit)
}

// StoredResponse implements jobbus.IdempotencyStorer: a replayed answer may be the
// retry of a write that committed and was not announced.
func (s *Store) StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (jobbus.StoredResponse, error) {
	r, err := s.db.StoredResponse(ctx, keyID, key, since)
	if err != nil || !r.Owed {
		return r, err
	}
	return r, s.settle(ctx, pending{owed: true})
}

// ClaimIdempotency implements jobbus.IdempotencyStorer.
func (s *Store) ClaimIdempotency(ctx context.Context, keyID int64, key string, since time.Time) (bool, error) {
	return s.db.ClaimIdempotency(ctx, keyID, key, since)
}

// SaveResponse implements jobbus.IdempotencyStorer.
func (s *Store) SaveResponse(ctx context.Context, idem jobbus.Idempotency, status int, body []byte, jobID int64) error {
	return s.db.SaveResponse(ctx, idem, status, body, jobID)
}

// QueryByIDs implements jobbus.JobStorer: on the primary, for readers that
// follow the events (whose horizon is the primary's).
func (s *Store) QueryByIDs(ctx context.Context, ids []int64) ([]jobbus.Detail, error) {
	return s.db.QueryByIDs(ctx, ids)
}

// EventsAfter implements jobbus.EventStorer, on the primary.
func (s *Store) EventsAfter(ctx context.Context, a *jobbus.Audience, after jobbus.Cursor, since time.Time, limit int) ([]jobbus.JobEvent, []jobbus.Detail, jobbus.Cursor, error) {
	return s.db.EventsAfter(ctx, a, after, since, limit)
}

// ReplaceCandidates implements jobbus.BatchStorer, on the primary: a replace
// decides on the latest state.
func (s *Store) ReplaceCandidates(ctx context.Context, spaceID, ownerKeyID int64, prefix string, keep []string) ([]jobbus.ReplaceCandidate, error) {
	return s.db.ReplaceCandidates(ctx, spaceID, ownerKeyID, prefix, keep)
}

// InsertBatchOp implements jobbus.BatchStorer.
func (s *Store) InsertBatchOp(ctx context.Context, op jobbus.BatchOp) error {
	return s.db.InsertBatchOp(ctx, op)
}

// ClaimBatchOp implements jobbus.BatchStorer.
func (s *Store) ClaimBatchOp(ctx context.Context) (jobbus.BatchOp, bool, error) {
	return s.db.ClaimBatchOp(ctx)
}

// SaveBatchOp implements jobbus.BatchStorer.
func (s *Store) SaveBatchOp(ctx context.Context, op jobbus.BatchOp) error {
	return s.db.SaveBatchOp(ctx, op)
}

// QueryBatchOp implements jobbus.BatchStorer, on the primary: the operation
// moves while its client polls.
func (s *Store) QueryBatchOp(ctx context.Context, id string) (jobbus.BatchOp, error) {
	return s.db.QueryBatchOp(ctx, id)
}

// PurgeBatchOps implements jobbus.BatchStorer.
func (s *Store) PurgeBatchOps(ctx context.Context, before time.Time) error {
	return s.db.PurgeBatchOps(ctx, before)
}
