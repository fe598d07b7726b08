package jobcache

import (
	"context"
	"fmt"
	"slices"

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
// bumped, then any write still owed is announced.
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
	if !p.owed {
		return nil
	}
	spaces, err := s.db.TakeOwed(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", jobbus.ErrUnannounced, err)
	}
	for _, id := range spaces {
		if err := s.changed(ctx, id); err != nil {
			// changed owes id again; the rest stay owed too.
			for _, rest := range spaces {
				s.owe(ctx, rest)
			}
			return err
		}
	}
	return nil
}

// changed bumps the change versions a write to a job of spaceID moves:
// every job's, and the space's (a job of no space is in no space's view);
// spaceID < 0 is a write whose space is not known, which moves every
// space's view.
func (s *Store) changed(ctx context.Context, spaceID int64) error {
	var err error
	switch {
	case spaceID > 0:
		err = s.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsSpace(spaceID))
	case spaceID < 0:
		err = s.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsBulk)
	default:
		err = s.cfg.Changes.Bump(ctx, scopes.Jobs)
	}
	if err != nil {
		s.owe(ctx, spaceID)
		return fmt.Errorf("%w: %w", jobbus.ErrUnannounced, err)
	}
	return nil
}

// owe records an announcement that failed, for whichever write, replay or
// re-post comes next. When that fails too the caller still answers 503, and
// the views stay as they were until the next write of the space bumps them.
func (s *Store) owe(ctx context.Context, spaceID int64) {
	_ = s.db.Owe(context.WithoutCancel(ctx), spaceID)
}
