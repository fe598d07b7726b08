// Package eventbus is the consumer kit of the job event log (issue 45):
// every downstream reader of job_events (a webhook endpoint, the alert
// matcher, the index notifier) keeps its own position (xid, seq) in
// event_readers and reads the committed events past it in batches, in
// order, as the changes feed reads them (jobdb/events.go: below the commit
// horizon, so none is skipped however transactions commit).
//
// One runner per reader: a runner claims the reader's lease, which bumps
// its fencing token, and moves the position only under that token, so a
// runner presumed dead (its lease lapsed, Temporal ran the activity again
// elsewhere) can neither deliver a batch twice past the new runner nor
// move the position back. A batch that fails is retried with back-off
// (the reader paused, no other reader held) from the same position, so a
// reader catches up in order once it recovers. Temporal owns what it is
// good at: the lease's owner (an activity attempt) and its durable timers.
//
// A new reader is one file: a Handler, and a Runner with its id and Filter.
package eventbus

import (
	"context"
	"errors"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// ErrFenced: another runner claimed the reader since this one did.
var ErrFenced = errors.New("another runner holds the reader")

// Lease is a runner's claim on a reader; Token fences its writes.
type Lease struct {
	Reader string
	Owner  string
	Token  int64
}

// Filter narrows what a reader reads (zero: every event).
type Filter struct {
	Types    []string         // nil: every type
	Audience *jobbus.Audience // nil: everyone's; else what it may hear of (event_heard)
	Since    time.Time        // zero: any time; else events that occurred at or after it
}

// State is a reader's position and health.
type State struct {
	Position    jobbus.Cursor
	Failures    int
	PausedUntil *time.Time
}

// Storer keeps the readers' positions and reads the log.
type Storer interface {
	// Claim takes the reader's lease for ttl (creating the reader at the
	// horizon when new) and bumps its token: whoever held it when take (the
	// caller knows the holder is dead: Temporal ran the activity again),
	// else only when it is free or lapsed (ErrFenced otherwise).
	Claim(ctx context.Context, reader, owner string, ttl time.Duration, take bool) (Lease, State, error)
	// Renew extends the lease (ErrFenced when another runner claimed it).
	Renew(ctx context.Context, l Lease, ttl time.Duration) error
	// Release ends the lease (a no-op when another runner claimed it).
	Release(ctx context.Context, l Lease) error
	// Read returns up to limit events past from that pass f, in order, and
	// the position to go on from (past the events f left out, up to the
	// horizon when the page is short).
	Read(ctx context.Context, from jobbus.Cursor, f Filter, limit int) ([]jobbus.JobEvent, jobbus.Cursor, error)
	// Advance moves the position to to and clears the failures (ErrFenced).
	Advance(ctx context.Context, l Lease, to jobbus.Cursor) error
	// Pause records a failure and holds the reader until until (ErrFenced).
	Pause(ctx context.Context, l Lease, until time.Time, why string) error
}

// Handler handles a batch, in order, all or nothing: an error retries the
// whole batch after a back-off (so it must be idempotent per event).
type Handler func(ctx context.Context, evs []jobbus.JobEvent) error

// Back-off of a failing reader.
const (
	MinBackoff = time.Second
	MaxBackoff = 5 * time.Minute
)

// Backoff is the pause after the n-th failure in a row (n ≥ 1): MinBackoff
// doubled per earlier failure, at most MaxBackoff.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 20 {
		return MaxBackoff
	}
	return min(MinBackoff<<(n-1), MaxBackoff)
}

// Runner runs one reader.
type Runner struct {
	Store  Storer
	Reader string
	Filter Filter
	Batch  int // events per batch; default 500
	Handle Handler
	Lease  time.Duration // default 30 s; renewed every third of it
	// Take: claim the reader whoever holds it (a Temporal activity, run
	// again only when the last run is presumed dead); otherwise a run
	// finds a live lease held and does nothing (Outcome.Fenced).
	Take bool
	Now  func() time.Time
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Outcome is how a Run ended.
type Outcome struct {
	Handled int        // events handled
	Fenced  bool       // another runner claimed the reader
	Paused  *time.Time // failing: come back then
}

// Run claims the reader and handles batches until it has caught up with
// the horizon, ctx ends, a batch fails (the reader paused) or another
// runner claims the reader. A paused reader is left alone until its pause
// is over.
func (r *Runner) Run(ctx context.Context, owner string) (Outcome, error) {
	ttl := r.Lease
	if ttl <= 0 {
		ttl = 30 * time.Second
	}
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	l, st, err := r.Store.Claim(ctx, r.Reader, owner, ttl, r.Take)
	if err != nil {
		return fenced(Outcome{}, err)
	}
	defer func() { _ = r.Store.Release(context.WithoutCancel(ctx), l) }()
	if st.PausedUntil != nil && st.PausedUntil.After(r.now()) {
		return Outcome{Paused: st.PausedUntil}, nil
	}
	var out Outcome
	pos, renewed := st.Position, r.now()
	for ctx.Err() == nil {
		if r.now().Sub(renewed) > ttl/3 {
			if err := r.Store.Renew(ctx, l, ttl); err != nil {
				return fenced(out, err)
			}
			renewed = r.now()
		}
		evs, next, err := r.Store.Read(ctx, pos, r.Filter, batch)
		if err != nil {
			return out, err
		}
		if len(evs) > 0 {
			if herr := r.Handle(ctx, evs); herr != nil {
				until := r.now().Add(Backoff(st.Failures + 1))
				if err := r.Store.Pause(ctx, l, until, herr.Error()); err != nil {
					return fenced(out, err)
				}
				out.Paused = &until
				return out, nil
			}
		}
		if next.XID != pos.XID || next.Seq != pos.Seq {
			if err := r.Store.Advance(ctx, l, next); err != nil {
				return fenced(out, err)
			}
			st.Failures, pos = 0, next
		}
		out.Handled += len(evs)
		if len(evs) < batch {
			return out, nil
		}
	}
	return out, ctx.Err()
}

func fenced(out Outcome, err error) (Outcome, error) {
	if errors.Is(err, ErrFenced) {
		out.Fenced = true
		return out, nil
	}
	return out, err
}
