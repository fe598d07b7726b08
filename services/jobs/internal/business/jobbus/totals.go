package jobbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
)

// Total is a listing's exact total as counted: when (the database's now())
// and when the first counted job expires (zero: none counted), and the
// search's queries it was counted with (nil: no search).
type Total struct {
	N         int
	At, Until time.Time
	Plan      *SearchPlan
}

// Totals are kept in Redis as change-version memos (libs/changes.Memo): a
// common term's exact total costs PostgreSQL every match (0.6 s at 1 M jobs,
// docs/search.md), while the page beside it is cheap; so a total is counted
// once per version of what it depends on and reused by every page, sort and
// key that lists the same jobs. A write moves the versions and with them the
// total; a job that expires meanwhile is taken off by counting the few jobs
// expired since (Expired), so a memo is as exact as a count.
const (
	totalTTL = 10 * time.Minute // a memo nobody reads goes
	// memoPause is how long the memos are left alone after Redis failed:
	// each read would otherwise wait for its timeout.
	memoPause = time.Second
	// clockMargin: this process's clock may lag the database's, whose now()
	// decides what has expired; correcting a little early costs one small count.
	clockMargin = 2 * time.Second
)

// totals are the business layer's memo state; shared by the copies NewWithTx makes.
type totals struct {
	flight      singleflight.Group
	pausedUntil atomic.Int64 // unix ns
	hits, miss  atomic.Int64
}

// Page returns one page of the active jobs that match f, and their total.
func (b *Business) Page(ctx context.Context, caller Caller, f ListFilter) ([]Job, int, error) {
	s, err := b.store.ReadsFor(ctx, caller.KeyID)
	if err != nil {
		return nil, 0, err
	}
	if b.cfg.Changes == nil || !b.cfg.TotalsMemo || f.Limit == 0 {
		return s.Page(ctx, f)
	}
	total, plan, err := b.total(ctx, s, f)
	if err != nil {
		return nil, 0, err
	}
	f.Search.Plan = plan // the queries the total was counted with
	jobs, err := s.PageOf(ctx, f, total)
	return jobs, total, err
}

// total is f's exact total: its memo, corrected for the jobs expired since,
// or counted (once for concurrent callers of the same versions) and kept;
// with the search's queries it was counted with, kept beside it.
func (b *Business) total(ctx context.Context, s Storer, f ListFilter) (int, *SearchPlan, error) {
	t := b.totals
	name := "total:" + s.CountKey(f)
	var m changes.Memo
	var err error
	if time.Now().UnixNano() >= t.pausedUntil.Load() {
		m, err = b.cfg.Changes.ReadMemo(ctx, name, scopes.JobsListed(f.SpaceID)...)
		if err != nil && !errors.Is(err, changes.ErrMissing) {
			t.pausedUntil.Store(time.Now().Add(memoPause).UnixNano())
		}
	}
	if err == nil && m.Found {
		t.hits.Add(1)
		n := int(m.Value)
		plan := decodePlan(f, m.Data)
		if !m.Until.IsZero() && !b.now().Add(clockMargin).Before(m.Until) {
			f.Search.Plan = plan
			gone, err := s.Expired(ctx, f, m.At)
			if err != nil {
				return 0, nil, err
			}
			n -= gone
		}
		return n, plan, nil
	}
	t.miss.Add(1)
	if err != nil { // no versions: count, keep nothing
		c, err := s.Count(ctx, f)
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
		c, err := s.Count(cctx, f)
		if err != nil {
			return Total{}, err
		}
		m.Value, m.At, m.Until, m.Data = int64(c.N), c.At, c.Until, ""
		if c.Plan != nil {
			data, err := json.Marshal(c.Plan)
			if err != nil {
				return Total{}, fmt.Errorf("encode search plan: %w", err)
			}
			m.Data = string(data)
		}
		if werr := b.cfg.Changes.WriteMemo(cctx, name, m, totalTTL); werr != nil {
			t.pausedUntil.Store(time.Now().Add(memoPause).UnixNano())
		}
		return c, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return c.(Total).N, c.(Total).Plan, nil
}

// decodePlan is the search plan kept in a memo's data; nil (the store
// computes it again) for no search, or a memo kept without one.
func decodePlan(f ListFilter, data string) *SearchPlan {
	if f.Search.Empty() || data == "" {
		return nil
	}
	var p SearchPlan
	if json.Unmarshal([]byte(data), &p) != nil {
		return nil
	}
	return &p
}

// TotalCounts reports the memo's hits and misses so far (metrics).
func (b *Business) TotalCounts() (hits, misses int64) {
	return b.totals.hits.Load(), b.totals.miss.Load()
}
