package importbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/feeds"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Polled is what a poll tells its workflow.
type Polled struct {
	Gone     bool      // the source was deleted: its workflow ends
	NextPoll time.Time // when the source is due next
	Run      *Run      // the run recorded (nil: not due, nothing done)
}

// Poll polls source id when it is due: a conditional GET of its feed; a
// 304 is a run with NotModified and no write at all; otherwise the
// positions are applied as a replace scoped to the source
// (jobbus.ApplySource; a feed with no position is a failed run that closes
// nothing), and the answer's validators kept for the next GET
// only once every row was applied (a poll that failed is repeated whole).
// A source not due yet (a wake-up that came twice) is left alone.
func (b *Business) Poll(ctx context.Context, id int64) (Polled, error) {
	src, err := b.store.Source(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Polled{Gone: true}, nil
	}
	if err != nil {
		return Polled{}, err
	}
	now := b.now()
	if src.NextPollAt.After(now) {
		return Polled{NextPoll: src.NextPollAt}, nil
	}
	run := Run{SourceID: src.ID, StartedAt: now}
	v, err := b.poll(ctx, src, &run)
	if err != nil {
		if !sourceError(err) {
			// Ours (the database, a cancelled activity): the activity is
			// retried, nothing recorded.
			return Polled{}, err
		}
		msg := err.Error()
		run.Error = &msg
		v = nil
	}
	run.FinishedAt = b.now()
	next := run.FinishedAt.Add(src.Interval)
	saved, err := b.store.SaveRun(ctx, run, v, next)
	if errors.Is(err, ErrNotFound) {
		return Polled{Gone: true}, nil // deleted while it was polled
	}
	if err != nil {
		return Polled{}, err
	}
	return Polled{NextPoll: next, Run: &saved}, nil
}

// errPoll is a poll's failure that the run records (the source's, not ours).
var errPoll = errors.New("poll")

// sourceError is a failure of the source (its answer, its feed), which the
// run records for its owner; any other is ours.
func sourceError(err error) bool {
	return errors.Is(err, errPoll) || errors.Is(err, feeds.ErrFetch) || errors.Is(err, feeds.ErrFormat)
}

// poll fetches and applies src, filling run; it returns the validators to
// keep (nil: keep the old ones).
func (b *Business) poll(ctx context.Context, src Source, run *Run) (*feeds.Validators, error) {
	if err := b.plan(ctx, src.SpaceID); err != nil {
		if errors.Is(err, ErrPlan) {
			return nil, fmt.Errorf("%w: the space is not a confirmed Pro space: its sources are not polled", errPoll)
		}
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, feeds.FetchTimeout)
	f, err := feeds.Fetch(fctx, b.cfg.Client, src.FeedURL, src.Validators)
	cancel()
	if err != nil {
		return nil, err
	}
	if f.NotModified {
		run.NotModified = true
		return nil, nil
	}
	ps, err := feeds.Parse(src.Kind, src.FeedURL, f.Body)
	if err != nil {
		return nil, err
	}
	run.Positions = len(ps)
	if len(ps) == 0 {
		// A board answering an empty list is far more often a board having a
		// bad moment than one emptied on purpose; closing every job on it
		// would be the batch's replace without confirm_empty. The validators
		// are not kept, so the next poll reads the feed whole again.
		return nil, fmt.Errorf("%w: the feed lists no positions; nothing was applied and no job closed "+
			"(to take a board's jobs down, close them or delete the source)", errPoll)
	}
	if len(ps) > MaxPositions {
		return nil, fmt.Errorf("%w: the feed lists %d positions; a source holds at most %d", errPoll, len(ps), MaxPositions)
	}
	d := feeds.Defaults{Company: src.Company, City: src.CityName, Tags: src.Tags}
	rows := make([]jobbus.CreateInput, len(ps))
	for i, p := range ps {
		body, err := json.Marshal(p.Body(d))
		if err != nil {
			return nil, fmt.Errorf("position %d: %w", i, err)
		}
		rows[i] = b.cfg.Decode(body)
		ref := p.Ref
		rows[i].ExternalRef = &ref
	}
	res, err := b.jobs.ApplySource(ctx, src.caller(), jobbus.SourceRef(src.ID), rows)
	if err != nil {
		return nil, err
	}
	for _, r := range res.Results {
		switch r.Action {
		case jobbus.ActionCreated:
			run.Created++
		case jobbus.ActionUpdated:
			run.Updated++
		case jobbus.ActionUnchanged:
			run.Unchanged++
		case jobbus.ActionClosed:
			run.Closed++
		case jobbus.ActionError:
			run.Errors++
			run.RowErrors = append(run.RowErrors, RowError{Index: r.Index, Ref: r.ExternalRef, Errors: r.Errors})
		}
	}
	return &f.Validators, nil
}
