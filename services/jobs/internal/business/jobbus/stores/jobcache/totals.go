package jobcache

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// Totals are kept in Redis as change-version memos (libs/changes.Memo): a
// common term's exact total costs PostgreSQL every match while the page
// beside it is cheap (docs/search.md; make bench rows b1-b8), so a total is
// counted once per version of what it depends on and reused by every page,
// sort and key that lists the same jobs. A write moves the versions and with
// them the total; a job that expires meanwhile is taken off by counting the
// few jobs expired since (jobsearch.Expired), so a memo is as exact as a
// count. The search's plan the total was counted with is kept beside it.
const (
	totalTTL = 10 * time.Minute // a memo nobody reads goes
	// memoPause is how long the memos are left alone after Redis failed:
	// each read would otherwise wait for its timeout.
	memoPause = time.Second
	// clockMargin: this process's clock may lag the database's, whose now()
	// decides what has expired; correcting a little early costs one small count.
	clockMargin = 2 * time.Second
)

// totals are the memo's state, shared by the stores InTx makes.
type totals struct {
	flight      singleflight.Group
	pausedUntil atomic.Int64 // unix ns
	hits, miss  atomic.Int64
}

// TotalCounts reports the memo's hits and misses so far (metrics).
func (s *Store) TotalCounts() (hits, misses int64) {
	return s.totals.hits.Load(), s.totals.miss.Load()
}

// Page implements jobbus.ListStorer: the page read where f's reader may read,
// its total from the memo when one is kept.
func (s *Store) Page(ctx context.Context, f jobbus.ListFilter) (jobs []jobbus.Job, total int, err error) {
	if s.cfg.Changes == nil || !s.cfg.TotalsMemo || f.Limit == 0 || s.pending != nil {
		err = s.read(ctx, f.Reader, func(db *jobdb.Store) (err error) {
			jobs, total, err = db.Page(ctx, f)
			return err
		})
		return jobs, total, err
	}
	total, plan, err := s.total(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	err = s.read(ctx, f.Reader, func(db *jobdb.Store) (err error) {
		jobs, err = jobsearch.PageOf(ctx, db.DB(), f, total, plan)
		return err
	})
	return jobs, total, err
}

// total is f's exact total: its memo, corrected for the jobs expired since,
// or counted on the primary (once for concurrent callers of the same
// versions) and kept; with the search's plan it was counted with.
func (s *Store) total(ctx context.Context, f jobbus.ListFilter) (int, *jobsearch.Plan, error) {
	t := s.totals
	name := "total:" + jobsearch.Key(f)
	var m changes.Memo
	var err error
	if time.Now().UnixNano() >= t.pausedUntil.Load() {
		m, err = s.cfg.Changes.ReadMemo(ctx, name, scopes.JobsListed(f.SpaceID)...)
		if err != nil && !errors.Is(err, changes.ErrMissing) {
			t.pausedUntil.Store(time.Now().Add(memoPause).UnixNano())
		}
	}
	if err == nil && m.Found {
		t.hits.Add(1)
		n := int(m.Value)
		var plan *jobsearch.Plan
		if !f.Search.Empty() {
			plan = jobsearch.DecodePlan(m.Data)
		}
		if !m.Until.IsZero() && !time.Now().Add(clockMargin).Before(m.Until) {
			var gone int
			err := s.read(ctx, f.Reader, func(db *jobdb.Store) (err error) {
				gone, err = jobsearch.Expired(ctx, db.DB(), f, m.At, plan)
				return err
			})
			if err != nil {
				return 0, nil, err
			}
			n -= gone
		}
		return n, plan, nil
	}
	t.miss.Add(1)
	if err != nil { // no versions: count, keep nothing
		c, err := jobsearch.Count(ctx, s.db.DB(), f)
		return c.N, c.Plan, err
	}
	key := name
	for _, v := range m.Versions {
		key += ":" + strconv.FormatUint(v, 10)
	}
	// Concurrent misses of one total under the same versions count once.
	c, err, _ := t.flight.Do(key, func() (any, error) {
		// Shared by every caller waiting for it: the first caller's going
		// away must not fail the others, its deadline still bounds it.
		cctx := context.WithoutCancel(ctx)
		if d, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			cctx, cancel = context.WithDeadline(cctx, d)
			defer cancel()
		}
		c, err := jobsearch.Count(cctx, s.db.DB(), f)
		if err != nil {
			return jobsearch.Total{}, err
		}
		m.Value, m.At, m.Until, m.Data = int64(c.N), c.At, c.Until, ""
		if c.Plan != nil {
			if m.Data, err = c.Plan.Encode(); err != nil {
				return jobsearch.Total{}, err
			}
		}
		if werr := s.cfg.Changes.WriteMemo(cctx, name, m, totalTTL); werr != nil {
			t.pausedUntil.Store(time.Now().Add(memoPause).UnixNano())
		}
		return c, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return c.(jobsearch.Total).N, c.(jobsearch.Total).Plan, nil
}
