package jobbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// Batch modes: upsert creates and updates by external_ref; replace also
// closes the importer's other jobs with a reference.
const (
	BatchUpsert  = "upsert"
	BatchReplace = "replace"
)

// Actions a batch row can have besides created, updated and closed.
const (
	ActionUnchanged = "unchanged"
	ActionError     = "error"
)

// MaxBatchRows is how many jobs one synchronous batch holds, and how many
// rows of an operation RunBatchOps applies in one transaction;
// MaxBatchAsyncRows how many an operation holds.
const (
	MaxBatchRows      = 100
	MaxBatchAsyncRows = 1000
)

// BatchInput is a POST /v2/jobs/batch after JSON decoding: each row is a
// create request (its TypeProblems included).
type BatchInput struct {
	Rows         []CreateInput
	Mode         string // "" is upsert
	DryRun       bool
	ConfirmEmpty bool
	// Problems are the type problems of the batch's own fields.
	Problems []string
}

// BatchRow is one row's result. Index is the row's position in the batch,
// -1 for a job that replace closed.
type BatchRow struct {
	Index       int
	ExternalRef string
	Action      string
	JobID       int64 // 0: none (an error, a dry run's new job)
	Status      string
	Errors      []string
}

// BatchResult is a batch's answer: one result per row in the order sent,
// then the jobs replace closed.
type BatchResult struct {
	Mode    string
	DryRun  bool
	Results []BatchRow
	// OperationID, Status and Rows: a batch kept as an operation (202).
	OperationID, Status string
	Rows                int
}

// Counts is how many results had each action.
func (r BatchResult) Counts() map[string]int {
	m := map[string]int{ActionCreated: 0, ActionUpdated: 0, ActionUnchanged: 0, ActionClosed: 0, ActionError: 0}
	for _, row := range r.Results {
		m[row.Action]++
	}
	return m
}

// ReplaceCandidate is one of an owner's jobs with a reference that a
// replace may close.
type ReplaceCandidate struct {
	JobID       int64
	ExternalRef string
}

// errDryRun rolls a dry run's transaction back once its results are known.
var errDryRun = errors.New("dry run")

// Batch applies rows of create requests, each by its external_ref, with the
// rules of a single create (prepare, Upsert: the same events reach webhooks,
// alerts and the changes feed); a row that breaks a rule is an error row
// and the others are applied. In replace mode the caller's other jobs with
// a reference are closed through the lifecycle (EventClose). All of it is one
// transaction, with the reply recorded under idem when given (not for a dry
// run): a retry with the key gets the recorded reply, and a batch interrupted
// before its commit applied nothing. A dry run runs the same statements and
// rolls them back, so its results are what the batch would do.
//
// More than MaxBatchRows rows (up to MaxBatchAsyncRows) are kept as an
// operation (BatchOp) and answered at once (202, OperationID set); RunBatchOps
// applies them later, MaxBatchRows at a time, or, for a dry run, all in one
// transaction it rolls back (dryRunOp): a dry run of 1 000 rows takes
// seconds, past a request's deadline, and applies nothing, so it needs no
// chunks.
func (b *Business) Batch(ctx context.Context, caller Caller, in BatchInput, idem *Idempotency,
	render func(BatchResult) (int, []byte, error)) (BatchResult, *Reply, error) {
	if in.Mode == "" {
		in.Mode = BatchUpsert
	}
	p := slices.Clone(in.Problems)
	switch {
	case in.Mode != BatchUpsert && in.Mode != BatchReplace:
		p = append(p, "mode must be one of upsert, replace")
	case len(in.Rows) > MaxBatchAsyncRows:
		p = append(p, fmt.Sprintf("jobs must hold at most %d jobs in one request", MaxBatchAsyncRows))
	case len(in.Rows) == 0 && in.Mode == BatchUpsert:
		p = append(p, "jobs must hold at least one job")
	case len(in.Rows) == 0 && !in.ConfirmEmpty:
		p = append(p, "jobs is empty: a replace with no jobs closes every job of yours with an external_ref; send confirm_empty: true to mean it")
	}
	if len(p) > 0 {
		return BatchResult{}, nil, &validate.Error{What: "batch", Problems: p}
	}
	if in.DryRun {
		idem = nil // a dry run applies nothing, and is not recorded
	}
	if idem != nil {
		if r, err := b.replay(ctx, b.store.Idem, *idem); r != nil || err != nil {
			return BatchResult{}, r, err
		}
	}
	async := len(in.Rows) > MaxBatchRows

	res := BatchResult{Mode: in.Mode, DryRun: in.DryRun}
	var jobs []*NewJob
	if !async {
		var err error
		if res.Results, jobs, err = b.prepareRows(ctx, caller, in.Rows, 0, map[string]int{}); err != nil {
			return BatchResult{}, nil, err
		}
	}
	var reply *Reply
	err := b.store.Tx.InTx(ctx, func(s Stores) error {
		if idem != nil {
			locked, err := s.Idem.ClaimIdempotency(ctx, idem.KeyID, idem.Key, b.now().Add(-IdempotencyTTL))
			if err != nil {
				return err
			}
			if !locked {
				return ErrInFlight
			}
			if reply, err = b.replay(ctx, s.Idem, *idem); reply != nil || err != nil {
				return err
			}
		}
		if async {
			op := BatchOp{ID: newHash(), KeyID: caller.KeyID, SpaceID: caller.SpaceID, Trusted: caller.TrustedImporter,
				Mode: in.Mode, ConfirmEmpty: in.ConfirmEmpty, DryRun: in.DryRun, Rows: in.Rows, Status: BatchPending}
			if err := s.Batches.InsertBatchOp(ctx, op); err != nil {
				return err
			}
			res.OperationID, res.Status, res.Rows = op.ID, op.Status, len(in.Rows)
		} else {
			if err := applyRows(ctx, s.Jobs, res.Results, jobs, in.DryRun); err != nil {
				return err
			}
			if in.Mode == BatchReplace {
				closed, err := b.closeMissing(ctx, s, caller, "", refsOf(in.Rows))
				if err != nil {
					return err
				}
				res.Results = append(res.Results, closed...)
			}
			if in.DryRun {
				return errDryRun
			}
		}
		if idem == nil {
			return nil
		}
		status, body, err := render(res)
		if err != nil {
			return err
		}
		reply = &Reply{Status: status, Body: body}
		return s.Idem.SaveResponse(ctx, *idem, status, body, 0)
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return BatchResult{}, nil, err
	}
	if reply != nil && reply.Replayed {
		return BatchResult{}, reply, nil
	}
	if async {
		b.kicked()
	}
	return res, reply, nil
}

// prepareRows applies the create rules to rows, the batch's rows from index
// start; seen holds the references of the rows before them (reference →
// first row), so that a reference twice is the later row's error.
func (b *Business) prepareRows(ctx context.Context, caller Caller, rows []CreateInput, start int, seen map[string]int) ([]BatchRow, []*NewJob, error) {
	results := make([]BatchRow, len(rows))
	jobs := make([]*NewJob, len(rows))
	for i, row := range rows {
		r := &results[i]
		r.Index = start + i
		dup := -1
		if row.ExternalRef == nil {
			row.TypeProblems = append(slices.Clone(row.TypeProblems), "external_ref is required in a batch")
		} else if r.ExternalRef = strings.TrimSpace(*row.ExternalRef); r.ExternalRef != "" {
			if j, ok := seen[r.ExternalRef]; ok {
				dup = j
			} else {
				seen[r.ExternalRef] = r.Index
			}
		}
		nj, err := b.prepare(ctx, caller, row)
		var ve *validate.Error
		switch {
		case errors.As(err, &ve):
			r.Action, r.Errors = ActionError, ve.Problems
			continue
		case errors.Is(err, ErrSpaceConflict):
			r.Action, r.Errors = ActionError, []string{"id_space differs from the space of this API key; a space key may only post for its own space"}
			continue
		case errors.Is(err, ErrSpaceNotGranted):
			r.Action, r.Errors = ActionError, []string{"id_space: a key without a space may post into a space only as a trusted importer"}
			continue
		case err != nil:
			return nil, nil, err
		}
		if dup >= 0 {
			r.Action, r.Errors = ActionError, []string{"external_ref " + strconv.Quote(r.ExternalRef) +
				" is also row " + strconv.Itoa(dup) + "'s: each job appears once in a batch"}
			continue
		}
		jobs[i] = &nj
	}
	return results, jobs, nil
}

// applyRows writes the prepared jobs on s, each with the single create's
// statement, and fills their results.
func applyRows(ctx context.Context, s JobStorer, results []BatchRow, jobs []*NewJob, dryRun bool) error {
	for i, nj := range jobs {
		if nj == nil {
			continue
		}
		w, err := s.Upsert(ctx, *nj)
		if err != nil {
			return fmt.Errorf("batch row %d: %w", results[i].Index, err)
		}
		r := &results[i]
		r.JobID, r.Status = w.JobID, w.Status
		switch {
		case w.Inserted:
			r.Action = ActionCreated
			if dryRun {
				r.JobID = 0 // rolled back: the id will not exist
			}
		case !w.Wrote:
			r.Action = ActionUnchanged
		default:
			r.Action = ActionUpdated
		}
	}
	return nil
}

// refsOf is the references rows name (trimmed, sorted, once each): a row
// that is an error keeps its job from replace too.
func refsOf(rows []CreateInput) []string {
	refs := []string{} // never nil: the store's "not in" of NULL would match nothing
	for _, row := range rows {
		if row.ExternalRef != nil {
			if ref := strings.TrimSpace(*row.ExternalRef); ref != "" {
				refs = append(refs, ref)
			}
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// closeMissing closes caller's active and paused jobs with a reference not
// in keep, through the lifecycle, on s: those of the import source whose
// references start with prefix, or with prefix "" those of no source.
func (b *Business) closeMissing(ctx context.Context, s Stores, caller Caller, prefix string, keep []string) ([]BatchRow, error) {
	cands, err := s.Batches.ReplaceCandidates(ctx, caller.SpaceID, OwnerOf(caller), prefix, keep)
	if err != nil {
		return nil, err
	}
	tx := *b
	tx.store = s
	var out []BatchRow
	for _, c := range cands {
		t, err := tx.apply(ctx, c.JobID, EventClose, caller.KeyID, nil, func(d Detail) error {
			if !Owns(caller, d) {
				return ErrForbidden
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("close job %d: %w", c.JobID, err)
		}
		out = append(out, BatchRow{Index: -1, ExternalRef: c.ExternalRef, Action: ActionClosed, JobID: c.JobID, Status: t.Status})
	}
	return out, nil
}
