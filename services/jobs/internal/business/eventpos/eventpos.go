// Package eventpos reads job_events past a one-row position table (xid,
// seq: webhook_dispatch, the webhook wake-ups' shared position), the way
// the changes feed reads them (jobdb/events.go): only rows of transactions
// below the commit horizon, in (xid, seq) order, so none is skipped however
// transactions commit. The round writes what it makes of the events in the
// statement that moves the position, so it is all or nothing. A reader
// with a position of its own, a lease and back-off is eventbus's.
package eventpos

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Events is the CTEs "pos" and "evs": the next committed events past the
// position in table (a trusted identifier), at most $1 of them.
func Events(table string) string {
	return `pos AS (SELECT xid, seq FROM ` + table + `),
evs AS (
    SELECT e.* FROM job_events e, pos
    WHERE (e.xid, e.seq) > (pos.xid, pos.seq) AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.xid, e.seq LIMIT $1
)`
}

// Move is the CTE "mv" that moves the position past the events read.
func Move(table string) string {
	return `mv AS (
    UPDATE ` + table + ` SET xid = last.xid, seq = last.seq
    FROM (SELECT xid, seq FROM evs ORDER BY xid DESC, seq DESC LIMIT 1) last
)`
}

// Round runs fn in a transaction holding the position's row lock, so the
// rounds of several workers take turns.
func Round(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, table string, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT FROM `+table+` FOR UPDATE`); err != nil {
			return err
		}
		return fn(tx)
	})
}
