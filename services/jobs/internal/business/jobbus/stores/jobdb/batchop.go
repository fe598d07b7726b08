package jobdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// InsertBatchOp implements jobbus.BatchStorer.
func (s *Store) InsertBatchOp(ctx context.Context, op jobbus.BatchOp) error {
	rows, err := json.Marshal(op.Rows)
	if err != nil {
		return fmt.Errorf("encode batch rows: %w", err)
	}
	if _, err := s.db.Exec(ctx, `INSERT INTO batch_operations (id, key_id, space_id, trusted, mode, confirm_empty, rows, status, dry_run)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, op.ID, op.KeyID, op.SpaceID, op.Trusted, op.Mode, op.ConfirmEmpty, rows, op.Status, op.DryRun); err != nil {
		return fmt.Errorf("insert batch operation: %w", err)
	}
	return nil
}

// batchOpColumns are an operation's columns with its rows; batchOpProgress
// with their number instead: decoding up to 1 000 rows for each progress
// poll was most of the jobs service's CPU while a client polled a batch
// every 20 ms (docs/benchmarks.md, issue 46).
const (
	batchOpColumns  = `id, key_id, space_id, trusted, mode, confirm_empty, rows, next_row, results, status, created_at, done_at, dry_run`
	batchOpProgress = `id, key_id, space_id, trusted, mode, confirm_empty, jsonb_array_length(rows), next_row, results, status, created_at, done_at, dry_run`
)

// scanBatchOp reads batchOpColumns, or batchOpProgress when !withRows.
func scanBatchOp(row pgx.Row, withRows bool) (jobbus.BatchOp, error) {
	var op jobbus.BatchOp
	var rows, results []byte
	var rowsDest any = &rows
	if !withRows {
		rowsDest = &op.RowCount
	}
	if err := row.Scan(&op.ID, &op.KeyID, &op.SpaceID, &op.Trusted, &op.Mode, &op.ConfirmEmpty, rowsDest, &op.NextRow, &results,
		&op.Status, &op.CreatedAt, &op.DoneAt, &op.DryRun); err != nil {
		return jobbus.BatchOp{}, err
	}
	if withRows {
		if err := json.Unmarshal(rows, &op.Rows); err != nil {
			return jobbus.BatchOp{}, fmt.Errorf("decode batch rows: %w", err)
		}
		op.RowCount = len(op.Rows)
	}
	if err := json.Unmarshal(results, &op.Results); err != nil {
		return jobbus.BatchOp{}, fmt.Errorf("decode batch results: %w", err)
	}
	return op, nil
}

// ClaimBatchOp implements jobbus.BatchStorer.
func (s *Store) ClaimBatchOp(ctx context.Context) (jobbus.BatchOp, bool, error) {
	op, err := scanBatchOp(s.db.QueryRow(ctx, `SELECT `+batchOpColumns+` FROM batch_operations
		WHERE status = 'pending' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.BatchOp{}, false, nil
	}
	if err != nil {
		return jobbus.BatchOp{}, false, fmt.Errorf("claim batch operation: %w", err)
	}
	return op, true, nil
}

// SaveBatchOp implements jobbus.BatchStorer.
func (s *Store) SaveBatchOp(ctx context.Context, op jobbus.BatchOp) error {
	results, err := json.Marshal(op.Results)
	if err != nil {
		return fmt.Errorf("encode batch results: %w", err)
	}
	if _, err := s.db.Exec(ctx, `UPDATE batch_operations SET next_row = $2, results = $3, status = $4, done_at = $5 WHERE id = $1`,
		op.ID, op.NextRow, results, op.Status, op.DoneAt); err != nil {
		return fmt.Errorf("save batch operation: %w", err)
	}
	return nil
}

// QueryBatchOp implements jobbus.BatchStorer: the operation without its rows
// (RowCount is their number).
func (s *Store) QueryBatchOp(ctx context.Context, id string) (jobbus.BatchOp, error) {
	op, err := scanBatchOp(s.db.QueryRow(ctx, `SELECT `+batchOpProgress+` FROM batch_operations WHERE id = $1`, id), false)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobbus.BatchOp{}, jobbus.ErrNotFound
	}
	if err != nil {
		return jobbus.BatchOp{}, fmt.Errorf("select batch operation: %w", err)
	}
	return op, nil
}

// PurgeBatchOps implements jobbus.BatchStorer (batch_operations_created_idx).
func (s *Store) PurgeBatchOps(ctx context.Context, before time.Time) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM batch_operations WHERE created_at < $1`, before); err != nil {
		return fmt.Errorf("purge batch operations: %w", err)
	}
	return nil
}
