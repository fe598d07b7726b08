// Package eventdb is the PostgreSQL store of the event readers
// (event_readers) and their reads of job_events.
package eventdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Store implements eventbus.Storer.
type Store struct{ pool *pgxpool.Pool }

// New returns the store over pool (search_path: the jobs schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// HorizonPosition is the SQL of a new reader's position: just below the
// commit horizon, so it reads every event committed from now on.
const HorizonPosition = `(pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text::xid8, 9223372036854775807`

// Claim implements eventbus.Storer.
func (s *Store) Claim(ctx context.Context, reader, owner string, ttl time.Duration, take bool) (eventbus.Lease, eventbus.State, error) {
	var st eventbus.State
	var xid int64
	l := eventbus.Lease{Reader: reader, Owner: owner}
	err := s.pool.QueryRow(ctx, `INSERT INTO event_readers AS r (reader, xid, seq, token, owner, lease_until)
		VALUES ($1, `+HorizonPosition+`, 1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (reader) DO UPDATE SET token = r.token + 1, owner = $2, lease_until = now() + make_interval(secs => $3)
		WHERE $4 OR r.lease_until IS NULL OR r.lease_until < now() OR r.owner = $2
		RETURNING r.token, r.xid::text::bigint, r.seq, r.failures, r.paused_until`, reader, owner, ttl.Seconds(), take).
		Scan(&l.Token, &xid, &st.Position.Seq, &st.Failures, &st.PausedUntil)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, st, eventbus.ErrFenced
	}
	if err != nil {
		return l, st, fmt.Errorf("claim reader %s: %w", reader, err)
	}
	st.Position.XID = uint64(xid) //nolint:gosec // G115: an xid8 stays below 2^63
	return l, st, nil
}

// Renew implements eventbus.Storer.
func (s *Store) Renew(ctx context.Context, l eventbus.Lease, ttl time.Duration) error {
	return s.exec(ctx, "renew reader", `UPDATE event_readers SET lease_until = now() + make_interval(secs => $3)
		WHERE reader = $1 AND token = $2`, l.Reader, l.Token, ttl.Seconds())
}

// Release implements eventbus.Storer.
func (s *Store) Release(ctx context.Context, l eventbus.Lease) error {
	err := s.exec(ctx, "release reader", `UPDATE event_readers SET lease_until = NULL, owner = NULL WHERE reader = $1 AND token = $2`,
		l.Reader, l.Token)
	if errors.Is(err, eventbus.ErrFenced) {
		return nil
	}
	return err
}

// Advance implements eventbus.Storer. The position only moves forward.
func (s *Store) Advance(ctx context.Context, l eventbus.Lease, to jobbus.Cursor) error {
	return s.exec(ctx, "advance reader", `UPDATE event_readers SET `+AdvanceSet+` WHERE reader = $1 AND token = $2`,
		l.Reader, l.Token, strconv.FormatUint(to.XID, 10), to.Seq)
}

// AdvanceSet moves a reader's position to ($3 xid as text, $4 seq) when
// that is forward, and clears its failures.
const AdvanceSet = `(xid, seq) = (SELECT CASE WHEN ($3::text::xid8, $4::bigint) > (xid, seq) THEN $3::text::xid8 ELSE xid END,
	CASE WHEN ($3::text::xid8, $4::bigint) > (xid, seq) THEN $4::bigint ELSE seq END),
	failures = 0, paused_until = NULL, last_error = NULL, updated_at = now()`

// Pause implements eventbus.Storer.
func (s *Store) Pause(ctx context.Context, l eventbus.Lease, until time.Time, why string) error {
	return s.exec(ctx, "pause reader", `UPDATE event_readers SET failures = failures + 1, paused_until = $3, last_error = left($4, 1000),
		updated_at = now() WHERE reader = $1 AND token = $2`, l.Reader, l.Token, until, why)
}

func (s *Store) exec(ctx context.Context, what, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() == 0 {
		return eventbus.ErrFenced
	}
	return nil
}

// readSQL: the page past ($1, $2) that passes the filter ($3 types or
// NULL; $4 space, $5 key, $6 whether an audience filters; $7 since or
// NULL), up to $8; and last a row of the horizon from the same snapshot.
const readSQL = `WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
page AS (
    SELECT false AS last, ` + EventColumns + ` FROM job_events e, horizon h
    WHERE (e.xid, e.seq) > ($1::text::xid8, $2::bigint) AND e.xid < h.xmin
      AND ($3::text[] IS NULL OR e.type = ANY($3))
      AND (NOT $6 OR event_heard($4::bigint, $5::bigint, e.space_id, e.key_id, e.status, e.prev_status))
      AND ($7::timestamptz IS NULL OR e.occurred_at >= $7)
    ORDER BY e.xid, e.seq LIMIT $8
)
SELECT * FROM (
    SELECT * FROM page
    UNION ALL
    SELECT true, '', 0, '', 0, '', '', 0, 0, now(), xmin::text::bigint, 0 FROM horizon
) r ORDER BY last, xid, seq`

// EventColumns are a job_events row (alias e) as ScanEvent reads it.
const EventColumns = `e.id::text, e.job_id, e.type, e.version, e.status, e.prev_status, e.space_id, e.key_id,
	e.occurred_at, e.xid::text::bigint, e.seq`

// Read implements eventbus.Storer.
func (s *Store) Read(ctx context.Context, from jobbus.Cursor, f eventbus.Filter, limit int) ([]jobbus.JobEvent, jobbus.Cursor, error) {
	var space, key int64
	if f.Audience != nil {
		space, key = f.Audience.SpaceID, f.Audience.KeyID
	}
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	rows, err := s.pool.Query(ctx, readSQL, strconv.FormatUint(from.XID, 10), from.Seq, f.Types, space, key, f.Audience != nil, since, limit)
	if err != nil {
		return nil, from, fmt.Errorf("read events: %w", err)
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
		return nil, from, fmt.Errorf("read events: %w", err)
	}
	horizon := evs[len(evs)-1].Cursor
	evs = evs[:len(evs)-1]
	next := from
	switch {
	case len(evs) < limit && horizon.XID > 0:
		// Every event below the horizon was read: go on from just under it.
		if h := (jobbus.Cursor{XID: horizon.XID - 1, Seq: math.MaxInt64}); less(next, h) {
			next = h
		}
	case len(evs) > 0:
		next = evs[len(evs)-1].Cursor
	}
	return evs, next, nil
}

func less(a, b jobbus.Cursor) bool { return a.XID < b.XID || a.XID == b.XID && a.Seq < b.Seq }

// State returns a reader's state (tests, operators).
func (s *Store) State(ctx context.Context, reader string) (eventbus.State, error) {
	var st eventbus.State
	var xid int64
	err := s.pool.QueryRow(ctx, `SELECT xid::text::bigint, seq, failures, paused_until FROM event_readers WHERE reader = $1`, reader).
		Scan(&xid, &st.Position.Seq, &st.Failures, &st.PausedUntil)
	st.Position.XID = uint64(xid) //nolint:gosec // G115: an xid8 stays below 2^63
	if err != nil {
		return st, fmt.Errorf("reader %s: %w", reader, err)
	}
	return st, nil
}
