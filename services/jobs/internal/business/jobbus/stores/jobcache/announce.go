package jobcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// pending is what writes must announce: the keys that wrote (their reads
// must see it wherever they run), the spaces whose views moved, and whether
// an earlier write is still owed its announcement.
type pending struct {
	keys, spaces []int64
	owed         bool
}

func (p *pending) add(keyID, spaceID int64) {
	p.addKey(keyID)
	p.addSpace(spaceID)
}

func (p *pending) addKey(keyID int64) {
	if keyID != 0 && !slices.Contains(p.keys, keyID) {
		p.keys = append(p.keys, keyID)
	}
}

func (p *pending) addSpace(spaceID int64) {
	if !slices.Contains(p.spaces, spaceID) {
		p.spaces = append(p.spaces, spaceID)
	}
}

func (p *pending) merge(q pending) {
	for _, k := range q.keys {
		p.addKey(k)
	}
	for _, sp := range q.spaces {
		p.addSpace(sp)
	}
	p.owed = p.owed || q.owed
}

// settle announces p now, or at the commit of the store's transaction.
func (s *Store) settle(ctx context.Context, p pending) error {
	if s.pending != nil {
		s.pending.merge(p)
		return nil
	}
	return s.announce(ctx, &p)
}

// announce makes committed writes visible: each writing key's reads wait
// for them on a replica (MarkWritten), the change versions they move are
// bumped, then any write still owed is announced. A bump that fails is owed
// (the unannounced table) and the write is answered: while Redis is away
// nobody reads the versions, and when it is back the epoch moves before
// any version is trusted again (libs/changes) and Settle bumps what is owed.
// Only a bump that could not be owed either is an error (ErrUnannounced).
func (s *Store) announce(ctx context.Context, p *pending) error {
	if s.routing.Routed() {
		for _, k := range p.keys {
			if err := s.db.MarkWritten(ctx, k); err != nil {
				return err
			}
		}
	}
	for _, sp := range p.spaces {
		if err := s.changed(ctx, sp); err != nil {
			return err
		}
	}
	if !p.owed || s.cfg.Changes.Away() {
		// While Redis is away what is owed stays owed: Settle takes it
		// once Redis answers.
		return nil
	}
	return s.settleOwed(ctx)
}

// settleOwed bumps the versions of every space owed an announcement; what
// cannot be bumped stays owed.
func (s *Store) settleOwed(ctx context.Context) error {
	spaces, err := s.db.TakeOwed(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", jobbus.ErrUnannounced, err)
	}
	for i, id := range spaces {
		if err := s.bump(ctx, id); err != nil {
			for _, rest := range spaces[i:] {
				if oerr := s.db.Owe(context.WithoutCancel(ctx), rest); oerr != nil {
					return fmt.Errorf("%w: %w", jobbus.ErrUnannounced, errors.Join(err, oerr))
				}
			}
			return nil // owed again
		}
	}
	if len(spaces) > 0 {
		s.settled.Add(int64(len(spaces)))
	}
	return nil
}

// Settle bumps what earlier writes owe, once Redis answers: the jobs API
// calls it every second (RunSettle), so that the versions catch up when
// Redis returns without waiting for the next write.
func (s *Store) Settle(ctx context.Context) error {
	if s.cfg.Changes == nil {
		return nil
	}
	if err := s.cfg.Changes.Ping(ctx); err != nil {
		return nil //nolint:nilerr // Redis still away is not a failure to settle: the next round tries again
	}
	return s.settleOwed(ctx)
}

// RunSettle calls Settle every interval until ctx ends.
func (s *Store) RunSettle(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, interval)
		_ = s.Settle(cctx)
		cancel()
	}
}

// changed bumps the change versions a write to a job of spaceID moves, or
// owes them when Redis is away; an error only when neither was possible.
func (s *Store) changed(ctx context.Context, spaceID int64) error {
	err := s.bump(ctx, spaceID)
	if err == nil {
		return nil
	}
	if oerr := s.db.Owe(context.WithoutCancel(ctx), spaceID); oerr != nil {
		return fmt.Errorf("%w: %w", jobbus.ErrUnannounced, errors.Join(err, oerr))
	}
	s.owed.Add(1)
	return nil
}

// bump moves the versions a write to a job of spaceID moves: every job's,
// and the space's (a job of no space is in no space's view); spaceID < 0 is
// a write whose space is not known, which moves every space's view.
func (s *Store) bump(ctx context.Context, spaceID int64) error {
	switch {
	case spaceID > 0:
		return s.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsSpace(spaceID))
	case spaceID < 0:
		return s.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsBulk)
	default:
		return s.cfg.Changes.Bump(ctx, scopes.Jobs)
	}
}

// Collectors are the store's announcement counters.
func (s *Store) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "jobs_announcements_owed_total",
			Help: "Writes answered while Redis was away, whose change versions were owed (the unannounced table) instead of bumped.",
		}, func() float64 { return float64(s.owed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "jobs_announcements_settled_total",
			Help: "Owed announcements (spaces) bumped once Redis answered again.",
		}, func() float64 { return float64(s.settled.Load()) }),
	}
}
