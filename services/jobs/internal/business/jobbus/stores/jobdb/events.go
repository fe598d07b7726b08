package jobdb

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Reading job_events in commit order. A sequence (or a clock) alone is
// not that order: transaction A takes seq 9, B takes 10 and commits first,
// and a reader that went past 10 never sees 9. So each row keeps its
// transaction's id (xid8, never wrapping), and a reader takes only rows of
// transactions older than every transaction still in progress
// (pg_snapshot_xmin of its snapshot), in (xid, seq) order: any row that
// commits later belongs to a transaction at or above that horizon, so above
// every position already served. A transaction held open delays the rows
// after it; it never lets a reader skip one.

// eventColumns are a job_events row as scanEvent reads it.
const eventColumns = `e.id::text, e.job_id, e.type, e.version, e.status, e.prev_status, e.space_id, e.key_id,
	e.occurred_at, e.xid::text::bigint, e.seq`

// eventsAfterSQL reads a page of events past ($1, $2) heard by the
// audience ($3 space, $4 key; $7 false: everyone), occurred at or after $5
// (NULL: any time), up to $6; and last a row of the horizon (its xid
// column), from the same snapshot: when the page is short, every event a
// reader may hear below the horizon was read, so it may go on from there.
const eventsAfterSQL = `WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
page AS (
    SELECT false AS last, ` + eventColumns + ` FROM job_events e, horizon h
    WHERE (e.xid, e.seq) > ($1::text::xid8, $2::bigint) AND e.xid < h.xmin
      AND ($5::timestamptz IS NULL OR e.occurred_at >= $5)
      AND (NOT $7 OR event_heard($3::bigint, $4::bigint, e.space_id, e.key_id, e.status, e.prev_status))
    ORDER BY e.xid, e.seq LIMIT $6
)
SELECT * FROM (
    SELECT * FROM page
    UNION ALL
    SELECT true, '', 0, '', 0, '', '', 0, 0, now(), xmin::text::bigint, 0 FROM horizon
) r ORDER BY last, xid, seq`

// EventsAfter implements jobbus.EventStorer. It reads the primary: the
// horizon is the primary's.
func (s *Store) EventsAfter(ctx context.Context, a *jobbus.Audience, after jobbus.Cursor, since time.Time, limit int) ([]jobbus.JobEvent, jobbus.Cursor, error) {
	var space, key int64
	if a != nil {
		space, key = a.SpaceID, a.KeyID
	}
	var sinceArg *time.Time
	if !since.IsZero() {
		sinceArg = &since
	}
	rows, err := s.db.Query(ctx, eventsAfterSQL, strconv.FormatUint(after.XID, 10), after.Seq, space, key, sinceArg, limit, a != nil)
	if err != nil {
		return nil, after, fmt.Errorf("select events: %w", err)
	}
	var last bool
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (jobbus.JobEvent, error) {
		var e jobbus.JobEvent
		var xid int64
		err := row.Scan(&last, &e.ID, &e.JobID, &e.Type, &e.Version, &e.Status, &e.PrevStatus, &e.SpaceID, &e.KeyID,
			&e.OccurredAt, &xid, &e.Cursor.Seq)
		e.Cursor.XID, e.Cursor.At = uint64(xid), e.OccurredAt //nolint:gosec // G115: an xid8 stays below 2^63
		return e, err
	})
	if err != nil || !last {
		return nil, after, fmt.Errorf("select events: %w", err)
	}
	horizon := evs[len(evs)-1].Cursor
	evs = evs[:len(evs)-1]
	next := after
	switch {
	case len(evs) < limit && horizon.XID > 0:
		// Every event below the horizon was read: go on from just under it.
		if h := (jobbus.Cursor{XID: horizon.XID - 1, Seq: math.MaxInt64, At: horizon.At}); less(next, h) {
			next = h
		}
	case len(evs) > 0:
		next = evs[len(evs)-1].Cursor
	}
	return evs, next, nil
}

func less(a, b jobbus.Cursor) bool { return a.XID < b.XID || a.XID == b.XID && a.Seq < b.Seq }

// PurgeEvents deletes up to limit events that occurred before cutoff.
func (s *Store) PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM job_events WHERE seq IN
		(SELECT seq FROM job_events WHERE occurred_at < $1 LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PastPositionSQL is the CTEs pos and evs of a consumer of job_events with
// a position row (table: one row of xid, seq): evs are the next committed
// events past it, below the commit horizon, in (xid, seq) order, $1 of them
// at most. The webhook dispatch and the alerts' matching share it.
func PastPositionSQL(table string) string {
	return `WITH pos AS (SELECT xid, seq FROM ` + table + `),
evs AS (
    SELECT e.* FROM job_events e, pos
    WHERE (e.xid, e.seq) > (pos.xid, pos.seq) AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.xid, e.seq LIMIT $1
)`
}

// MovePositionSQL moves table's position past the last of evs.
func MovePositionSQL(table string) string {
	return `UPDATE ` + table + ` SET xid = last.xid, seq = last.seq
    FROM (SELECT xid, seq FROM evs ORDER BY xid DESC, seq DESC LIMIT 1) last`
}
