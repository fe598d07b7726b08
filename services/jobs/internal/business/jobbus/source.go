package jobbus

import (
	"context"
	"strconv"
	"strings"
)

// SourceRefPrefix starts the external_ref of every job an import source
// wrote (SourceRef): a replace by the source closes only its own jobs, and a
// replace by its owner's batches none of them. Posts and batches may not
// use it.
const SourceRefPrefix = "src:"

// SourceRef is the prefix of the references of source id's jobs.
func SourceRef(id int64) string { return SourceRefPrefix + strconv.FormatInt(id, 10) + ":" }

// ApplySource applies one poll of an import source for caller, its owner:
// rows are the source's positions as create requests, each with the
// source's own id as external_ref, which is stored behind prefix
// (SourceRef). It is a replace scoped to the source: each row is created or
// updated as a batch's row is (the same rules, statements and events), and
// the caller's jobs with prefix that no row names are closed; the owner's
// other jobs, and other sources', are not. The rows are applied
// MaxBatchRows to a transaction and the closing in a last one, so a large
// source never holds one long transaction; a poll that fails half-way is
// repeated whole by the next (rows by reference are idempotent: the
// applied ones are unchanged then) and closes nothing until every row was
// applied. The results' references are the source's own (without prefix).
func (b *Business) ApplySource(ctx context.Context, caller Caller, prefix string, rows []CreateInput) (BatchResult, error) {
	rows = append([]CreateInput(nil), rows...)
	for i := range rows {
		rows[i].fromSource = true
		if rows[i].ExternalRef != nil {
			ref := prefix + strings.TrimSpace(*rows[i].ExternalRef)
			rows[i].ExternalRef = &ref
		}
	}
	res := BatchResult{Mode: BatchReplace}
	var jobs []*NewJob
	var err error
	if res.Results, jobs, err = b.prepareRows(ctx, caller, rows, 0, map[string]int{}); err != nil {
		return BatchResult{}, err
	}
	for start := 0; start < len(rows); start += MaxBatchRows {
		end := min(start+MaxBatchRows, len(rows))
		if err := b.store.Tx.InTx(ctx, func(s Stores) error {
			return applyRows(ctx, s.Jobs, res.Results[start:end], jobs[start:end], false)
		}); err != nil {
			return BatchResult{}, err
		}
	}
	if err := b.store.Tx.InTx(ctx, func(s Stores) error {
		closed, err := b.closeMissing(ctx, s, caller, prefix, refsOf(rows))
		res.Results = append(res.Results, closed...)
		return err
	}); err != nil {
		return BatchResult{}, err
	}
	for i := range res.Results {
		res.Results[i].ExternalRef = strings.TrimPrefix(res.Results[i].ExternalRef, prefix)
	}
	return res, nil
}
