package jobbus

import (
	"context"
	"errors"
	"time"
)

// Retention is how long events are kept: the changes feed reaches back this
// far, and a mirror further behind resyncs from GET /v2/jobs.
const Retention = 30 * 24 * time.Hour

// ErrGone is a feed position older than the retention.
var ErrGone = errors.New("the changes before this position are no longer kept")

// Change feed limits.
const (
	DefaultChanges = 100
	MaxChanges     = 500
)

// ChangesFrom is where a feed page starts: after a cursor, or (no cursor)
// at the events that occurred at or after Since.
type ChangesFrom struct {
	Cursor *Cursor
	Since  time.Time
}

// ChangeEntry is one change as a reader sees it: the job as it is now when
// the reader may read it (Job), else only its id and current status.
type ChangeEntry struct {
	Event  JobEvent
	Job    *Detail
	Status string
}

// ChangesPage is one page of the feed and where the next starts.
type ChangesPage struct {
	Changes []ChangeEntry
	Next    Cursor
}

// Changes returns the changes of the jobs caller hears of (Audience), in
// commit order, each at least once.
func (b *Business) Changes(ctx context.Context, caller Caller, from ChangesFrom, limit int) (ChangesPage, error) {
	cutoff := b.now().Add(-Retention)
	var after Cursor
	since := from.Since
	if from.Cursor != nil {
		after, since = *from.Cursor, time.Time{}
	}
	switch {
	case from.Cursor != nil && after.At.Before(cutoff), from.Cursor == nil && !since.IsZero() && since.Before(cutoff):
		return ChangesPage{}, ErrGone
	}
	a := AudienceOf(caller)
	evs, jobs, next, err := b.store.Events.EventsAfter(ctx, &a, after, since, limit)
	if err != nil {
		return ChangesPage{}, err
	}
	if next.At.IsZero() { // no event and no horizon yet: start again where this page did
		next.At = b.now()
		if !since.IsZero() {
			next.At = since
		}
	}
	return ChangesPage{Changes: b.entriesOf(caller, evs, jobs), Next: next}, nil
}

// Entries are events as caller sees them now, in their order (webhook
// bodies, a batch at a time).
func (b *Business) Entries(ctx context.Context, caller Caller, evs []JobEvent) ([]ChangeEntry, error) {
	return b.entries(ctx, caller, evs)
}

// entries renders events for caller with the jobs as they are now.
func (b *Business) entries(ctx context.Context, caller Caller, evs []JobEvent) ([]ChangeEntry, error) {
	ids := make([]int64, 0, len(evs))
	seen := map[int64]bool{}
	for _, e := range evs {
		if !seen[e.JobID] {
			seen[e.JobID] = true
			ids = append(ids, e.JobID)
		}
	}
	var ds []Detail
	if len(ids) > 0 {
		var err error
		if ds, err = b.store.Jobs.QueryByIDs(ctx, ids); err != nil {
			return nil, err
		}
	}
	return b.entriesOf(caller, evs, ds), nil
}

// entriesOf renders events for caller with their jobs ds.
func (b *Business) entriesOf(caller Caller, evs []JobEvent, ds []Detail) []ChangeEntry {
	jobs := make(map[int64]*Detail, len(ds))
	for i := range ds {
		jobs[ds[i].ID] = &ds[i]
	}
	out := make([]ChangeEntry, 0, len(evs))
	for _, e := range evs {
		ce := ChangeEntry{Event: e, Status: e.Status}
		if d := jobs[e.JobID]; d != nil {
			ce.Status = d.Status
			if b.readable(caller, *d) == nil {
				ce.Job = d
			}
		}
		out = append(out, ce)
	}
	return out
}

// Entry is one event as caller sees it now (a webhook's body).
func (b *Business) Entry(ctx context.Context, caller Caller, e JobEvent) (ChangeEntry, error) {
	es, err := b.entries(ctx, caller, []JobEvent{e})
	if err != nil {
		return ChangeEntry{}, err
	}
	return es[0], nil
}

// Details are the jobs of ids as they are now (those that exist).
func (b *Business) Details(ctx context.Context, ids []int64) ([]Detail, error) {
	return b.store.Jobs.QueryByIDs(ctx, ids)
}

// Readable is whether caller may read the job d.
func (b *Business) Readable(caller Caller, d Detail) bool { return b.readable(caller, d) == nil }
