package jobcache

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

// read runs fn on the primary, or for a reader who may lag (jobbus.Reader)
// on the replica once it has replayed that reader's own writes (and on the
// primary when the replica fails or lags too far).
func (s *Store) read(ctx context.Context, r jobbus.Reader, fn func(*jobdb.Store) error) error {
	if s.pending != nil || r.Latest || r.Lock || !s.routing.Routed() {
		return fn(s.db)
	}
	var after pg.LSN // an anonymous reader: any replica state will do
	if r.KeyID != 0 {
		var err error
		if after, err = s.db.ReadAfter(ctx, r.KeyID); err != nil {
			return err
		}
	}
	return s.routing.After(after).Read(ctx, func(p *pgxpool.Pool) error { return fn(s.db.On(p)) })
}

// QueryByID implements jobbus.JobStorer: a job locked for a decision is
// announced after commit whatever the decision writes, since it may be the
// retry of one that committed and failed to announce.
func (s *Store) QueryByID(ctx context.Context, id int64, r jobbus.Reader) (jobbus.Detail, error) {
	var d jobbus.Detail
	err := s.read(ctx, r, func(db *jobdb.Store) (err error) {
		d, err = db.QueryByID(ctx, id, r)
		return err
	})
	if err != nil || !r.Lock {
		return d, err
	}
	var p pending
	p.add(r.KeyID, d.SpaceID)
	return d, s.settle(ctx, p)
}

// List implements jobbus.ListStorer.
func (s *Store) List(ctx context.Context, f jobbus.ListFilter) (jobbus.JobRows, error) {
	var rows jobbus.JobRows
	err := s.read(ctx, f.Reader, func(db *jobdb.Store) (err error) {
		rows, err = db.List(ctx, f)
		return err
	})
	return rows, err
}

// Feed implements jobbus.ListStorer: a public read.
func (s *Store) Feed(ctx context.Context, f jobbus.ListFilter) ([]jobbus.Job, time.Time, error) {
	var jobs []jobbus.Job
	var changed time.Time
	err := s.read(ctx, jobbus.Reader{}, func(db *jobdb.Store) (err error) {
		jobs, changed, err = db.Feed(ctx, f)
		return err
	})
	return jobs, changed, err
}

// Active implements jobbus.ListStorer: a public read.
func (s *Store) Active(ctx context.Context, w jobbus.ActiveWalk) ([]jobbus.Detail, error) {
	var jobs []jobbus.Detail
	err := s.read(ctx, jobbus.Reader{}, func(db *jobdb.Store) (err error) {
		jobs, err = db.Active(ctx, w)
		return err
	})
	return jobs, err
}

// SitemapParts implements jobbus.ListStorer: a public read.
func (s *Store) SitemapParts(ctx context.Context, size int64) ([]jobbus.SitemapPart, error) {
	var parts []jobbus.SitemapPart
	err := s.read(ctx, jobbus.Reader{}, func(db *jobdb.Store) (err error) {
		parts, err = db.SitemapParts(ctx, size)
		return err
	})
	return parts, err
}

// Changed implements jobbus.ListStorer: a public read, on the replica whose
// jobs the other public reads show.
func (s *Store) Changed(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.read(ctx, jobbus.Reader{}, func(db *jobdb.Store) (err error) {
		t, err = db.Changed(ctx)
		return err
	})
	return t, err
}
