package jobbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Statuses of a batch operation.
const (
	BatchPending = "pending" // kept, not (completely) applied yet
	BatchDone    = "done"
)

// BatchOpTTL is how long an operation is kept after it was made.
const BatchOpTTL = 30 * 24 * time.Hour

// BatchOp is a batch of more than MaxBatchRows jobs, kept when it was
// received (with the Idempotency-Key record, in one transaction) and applied
// by RunBatchOps, MaxBatchRows rows a transaction: each chunk commits with
// the operation's progress (NextRow) and results, so a process killed
// mid-operation leaves it where the last chunk committed, and whoever runs
// it next goes on from there: no row lost, none applied twice.
type BatchOp struct {
	ID           string
	KeyID        int64
	SpaceID      int64
	Trusted      bool
	Mode         string
	ConfirmEmpty bool
	// DryRun: every row is applied in one transaction that is rolled back
	// (dryRunOp); only the results are kept.
	DryRun bool
	Rows   []CreateInput
	// RowCount is len(Rows), also when the rows were not read
	// (QueryBatchOp: a progress poll needs only their number).
	RowCount  int
	NextRow   int
	Results   []BatchRow
	Status    string
	CreatedAt time.Time
	DoneAt    *time.Time
}

func (op BatchOp) caller() Caller {
	return Caller{KeyID: op.KeyID, SpaceID: op.SpaceID, TrustedImporter: op.Trusted}
}

// BatchKicks receives when this process kept a batch operation, so that its
// runner starts on it at once rather than at its next tick.
func (b *Business) BatchKicks() <-chan struct{} { return b.kick }

// kicked tells the runner (BatchKicks) that an operation waits.
func (b *Business) kicked() {
	select {
	case b.kick <- struct{}{}:
	default: // a kick is pending already
	}
}

// RunBatchOps applies the pending operations' rows, one chunk of
// MaxBatchRows rows per transaction, until none is left; it returns how many
// chunks it applied. Operations are claimed with FOR UPDATE SKIP LOCKED, so
// any number of processes may run it at once.
func (b *Business) RunBatchOps(ctx context.Context) (int, error) {
	if err := b.store.Batches.PurgeBatchOps(ctx, b.now().Add(-BatchOpTTL)); err != nil {
		return 0, err
	}
	chunks := 0
	for {
		found := false
		err := b.store.Tx.InTx(ctx, func(s Stores) error {
			op, ok, err := s.Batches.ClaimBatchOp(ctx)
			if err != nil || !ok {
				return err
			}
			found = true
			if op.DryRun {
				return b.dryRunOp(ctx, s, &op)
			}
			return b.runChunk(ctx, s, &op)
		})
		if err != nil {
			return chunks, err
		}
		if !found {
			return chunks, nil
		}
		chunks++
	}
}

// runChunk applies op's next chunk on s and saves its progress there.
func (b *Business) runChunk(ctx context.Context, s Stores, op *BatchOp) error {
	caller := op.caller()
	seen := map[string]int{}
	for i, row := range op.Rows[:op.NextRow] {
		if row.ExternalRef != nil {
			if ref := strings.TrimSpace(*row.ExternalRef); ref != "" {
				if _, ok := seen[ref]; !ok {
					seen[ref] = i
				}
			}
		}
	}
	end := min(op.NextRow+MaxBatchRows, len(op.Rows))
	results, jobs, err := b.prepareRows(ctx, caller, op.Rows[op.NextRow:end], op.NextRow, seen)
	if err != nil {
		return fmt.Errorf("batch %s: %w", op.ID, err)
	}
	if err := applyRows(ctx, s.Jobs, results, jobs, false); err != nil {
		return fmt.Errorf("batch %s: %w", op.ID, err)
	}
	op.Results = append(op.Results, results...)
	op.NextRow = end
	if end == len(op.Rows) {
		if op.Mode == BatchReplace {
			closed, err := b.closeMissing(ctx, s, caller, "", refsOf(op.Rows))
			if err != nil {
				return fmt.Errorf("batch %s: %w", op.ID, err)
			}
			op.Results = append(op.Results, closed...)
		}
		now := b.now()
		op.Status, op.DoneAt = BatchDone, &now
	}
	return s.Batches.SaveBatchOp(ctx, *op)
}

// dryRunOp answers a dry run kept as an operation: all its rows and
// replace's closings in one transaction of their own, rolled back, as a
// synchronous dry run does (so its results are the applied batch's, rows
// after rows and closings after all of them); then the results are saved
// on s, which holds the claim. A process killed meanwhile applied nothing:
// whoever claims it next runs it again.
func (b *Business) dryRunOp(ctx context.Context, s Stores, op *BatchOp) error {
	caller := op.caller()
	results, jobs, err := b.prepareRows(ctx, caller, op.Rows, 0, map[string]int{})
	if err != nil {
		return fmt.Errorf("batch %s: %w", op.ID, err)
	}
	err = b.store.Tx.InTx(ctx, func(tx Stores) error {
		if err := applyRows(ctx, tx.Jobs, results, jobs, true); err != nil {
			return err
		}
		if op.Mode == BatchReplace {
			closed, err := b.closeMissing(ctx, tx, caller, "", refsOf(op.Rows))
			if err != nil {
				return err
			}
			results = append(results, closed...)
		}
		return errDryRun
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return fmt.Errorf("batch %s: %w", op.ID, err)
	}
	now := b.now()
	op.Results, op.NextRow, op.Status, op.DoneAt = results, len(op.Rows), BatchDone, &now
	return s.Batches.SaveBatchOp(ctx, *op)
}

// BatchOperation returns the caller's operation id (ErrNotFound for
// another key's, or one older than BatchOpTTL).
func (b *Business) BatchOperation(ctx context.Context, caller Caller, id string) (BatchOp, error) {
	op, err := b.store.Batches.QueryBatchOp(ctx, id)
	if err != nil {
		return BatchOp{}, err
	}
	if op.KeyID != caller.KeyID || b.now().Sub(op.CreatedAt) > BatchOpTTL {
		return BatchOp{}, ErrNotFound
	}
	return op, nil
}

// Result is op as a batch's result: its rows' results so far.
func (op BatchOp) Result() BatchResult {
	return BatchResult{Mode: op.Mode, DryRun: op.DryRun, Results: op.Results, OperationID: op.ID, Status: op.Status, Rows: op.RowCount}
}
