package hookdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// A webhook endpoint is a reader of the event log (eventbus): its position
// is what it has been sent. webhook_deliveries holds only what is not
// simply past that position: a delivery that failed and is retried (with
// the later events of its job queued behind it, which keeps the order per
// job), the owner's pings, redeliveries and recoveries, and the rows the
// earlier dispatch left pending at the upgrade.

// dueSQL: the endpoint's ($1) pending deliveries oldest first that have
// no older pending one of their job (the head of each job), when due,
// leaving out the jobs of $2 (a delivery of theirs is in flight). A job
// whose head waits for its retry waits whole: that keeps the order per
// job. (Read in id order and stopped at $3, not DISTINCT ON over every
// pending row: a backlog costs a poll what it takes, not what it holds.)
const dueSQL = `SELECT ` + deliveryColumns + ` FROM webhook_deliveries d
	WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.job_id <> ALL($2)
	  AND (d.next_try_at IS NULL OR d.next_try_at <= now())
	  AND NOT EXISTS (SELECT FROM webhook_deliveries p WHERE p.endpoint_id = $1 AND p.job_id = d.job_id
	                  AND p.status = 'pending' AND p.id < d.id)
	ORDER BY d.id LIMIT $3`

// TakeDue returns the endpoint and up to limit due deliveries (one per
// job, none of the jobs in busy) for the holder of lease;
// hookbus.ErrNotFound when the endpoint is gone, eventbus.ErrFenced when
// another pump claimed its reader. A disabled endpoint comes without
// deliveries.
func (s *Store) TakeDue(ctx context.Context, endpointID int64, l eventbus.Lease, busy []int64, limit int) (Due, error) {
	var d Due
	var old *string
	var token *int64
	e := &d.Endpoint
	err := s.pool.QueryRow(ctx, `SELECT r.token, w.secret, CASE WHEN w.old_secret_until > now() THEN w.old_secret END,
		EXISTS (SELECT FROM webhook_deliveries p WHERE p.endpoint_id = w.id AND p.status = 'pending'), `+endpointColumns+`
		FROM webhook_endpoints w LEFT JOIN event_readers r ON r.reader = 'webhook:' || w.id WHERE w.id = $1`, endpointID).
		Scan(&token, &d.Secret, &old, &d.Pending,
			&e.ID, &e.SpaceID, &e.KeyID, &e.URL, &e.Description, &e.Events, &e.Email, &e.Enabled,
			&e.DisabledReason, &e.FailingSince, &e.OldSecretUntil, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Due{}, hookbus.ErrNotFound
	}
	if err != nil {
		return Due{}, fmt.Errorf("select webhook endpoint: %w", err)
	}
	if token == nil || *token != l.Token {
		return Due{}, eventbus.ErrFenced
	}
	if old != nil {
		d.OldSecret = *old
	}
	if !e.Enabled || !d.Pending || limit <= 0 {
		return d, nil
	}
	if busy == nil {
		busy = []int64{}
	}
	rows, err := s.pool.Query(ctx, dueSQL, endpointID, busy, limit)
	if err != nil {
		return Due{}, fmt.Errorf("due webhook deliveries: %w", err)
	}
	d.Deliveries, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (hookbus.Delivery, error) { return scanDelivery(r) })
	return d, err
}

// PendingJobs are those of jobs with a pending delivery to the endpoint: a
// new event of theirs is queued behind it.
func (s *Store) PendingJobs(ctx context.Context, endpointID int64, jobs []int64) (map[int64]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT job_id FROM webhook_deliveries
		WHERE endpoint_id = $1 AND status = 'pending' AND job_id = ANY($2)`, endpointID, jobs)
	if err != nil {
		return nil, fmt.Errorf("pending webhook jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pending webhook jobs: %w", err)
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// Advance moves the endpoint's reader to to under the lease and, in the
// same statement, queues the events that were not simply delivered, in
// order; eventbus.ErrFenced (and nothing written) when another pump
// claimed the reader.
func (s *Store) Advance(ctx context.Context, endpointID int64, l eventbus.Lease, to jobbus.Cursor, qs []Queued) error {
	n := len(qs)
	evs, sts, atts := make([]string, n), make([]string, n), make([]int, n)
	codes, lats := make([]*int, n), make([]*int, n)
	bodies, errs := make([]*string, n), make([]*string, n)
	next := make([]*int64, n)
	for i, q := range qs {
		evs[i], sts[i] = q.Event.ID, "pending"
		if a := q.Attempt; a != nil {
			sts[i], atts[i], codes[i], lats[i], bodies[i], errs[i], next[i] = a.Status, 1, a.ResponseStatus, a.LatencyMS, a.ResponseBody, a.Error, a.NextTryAt
		}
	}
	var moved int
	err := s.pool.QueryRow(ctx, `WITH mv AS (
		UPDATE event_readers SET `+eventdb.AdvanceSet+` WHERE reader = $1 AND token = $2 RETURNING 1
	), ins AS (
		INSERT INTO webhook_deliveries (endpoint_id, event_id, msg_id, type, job_id, version, occurred_at, status, attempts,
			response_status, response_body, latency_ms, last_error, next_try_at, finished_at)
		SELECT $5, e.id, e.id::text, e.type, e.job_id, e.version, e.occurred_at, a.status, a.attempts, a.code, a.body, a.lat, a.err,
			to_timestamp(a.next), CASE WHEN a.status <> 'pending' THEN now() END
		FROM unnest($6::uuid[], $7::text[], $8::int[], $9::int[], $10::text[], $11::int[], $12::text[], $13::bigint[])
			WITH ORDINALITY AS a(event_id, status, attempts, code, body, lat, err, next, ord)
		JOIN job_events e ON e.id = a.event_id
		WHERE EXISTS (SELECT FROM mv)
		ORDER BY a.ord
		ON CONFLICT DO NOTHING
	)
	SELECT count(*) FROM mv`, hookbus.ReaderID(endpointID), l.Token, strconv.FormatUint(to.XID, 10), to.Seq, endpointID,
		evs, sts, atts, codes, bodies, lats, errs, next).Scan(&moved)
	if err != nil {
		return fmt.Errorf("advance webhook endpoint: %w", err)
	}
	if moved == 0 {
		return eventbus.ErrFenced
	}
	return nil
}

// RecordAll keeps the outcomes of attempts on their deliveries in one
// statement.
func (s *Store) RecordAll(ctx context.Context, as []Attempt) error {
	n := len(as)
	ids, sts := make([]int64, n), make([]string, n)
	codes, lats := make([]*int, n), make([]*int, n)
	bodies, errs := make([]*string, n), make([]*string, n)
	next := make([]*int64, n)
	for i, a := range as {
		ids[i], sts[i], codes[i], lats[i], bodies[i], errs[i], next[i] = a.DeliveryID, a.Status, a.ResponseStatus, a.LatencyMS, a.ResponseBody, a.Error, a.NextTryAt
	}
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries d SET status = a.status, attempts = d.attempts + 1, response_status = a.code,
		response_body = a.body, latency_ms = a.lat, last_error = a.err, next_try_at = to_timestamp(a.next),
		finished_at = CASE WHEN a.status <> 'pending' THEN now() END
		FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::int[], $6::text[], $7::bigint[]) AS a(id, status, code, body, lat, err, next)
		WHERE d.id = a.id`, ids, sts, codes, bodies, lats, errs, next)
	if err != nil {
		return fmt.Errorf("record webhook attempts: %w", err)
	}
	return nil
}

// SkipPending marks every pending delivery of a disabled endpoint skipped.
func (s *Store) SkipPending(ctx context.Context, endpointID int64, why string) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'skipped', last_error = $2, next_try_at = NULL,
		finished_at = now() WHERE endpoint_id = $1 AND status = 'pending'`, endpointID, why)
	if err != nil {
		return fmt.Errorf("skip webhook deliveries: %w", err)
	}
	return nil
}

// ReleasePump ends the pump's lease once every dispatch round that saw it
// has committed (PumpLock): from then on a new event wakes the endpoint.
func (s *Store) ReleasePump(ctx context.Context, l eventbus.Lease) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, PumpLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE event_readers SET lease_until = NULL, owner = NULL WHERE reader = $1 AND token = $2`, l.Reader, l.Token)
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook pump release: %w", err)
	}
	return nil
}

// PausedSQL is whether the endpoint (alias w) is paused: failing, with
// retries waiting. It reads no new events until a retry succeeds.
const PausedSQL = `(w.failing_since IS NOT NULL AND EXISTS (SELECT FROM webhook_deliveries p
	WHERE p.endpoint_id = w.id AND p.status = 'pending'))`

// heardSQL is whether the endpoint (alias w) is not paused and an event
// past its reader's (alias r) position is below the horizon, one it
// subscribes to and hears of.
const heardSQL = `NOT ` + PausedSQL + ` AND EXISTS (SELECT FROM job_events e WHERE (e.xid, e.seq) > (r.xid, r.seq)
	AND e.xid < pg_snapshot_xmin(pg_current_snapshot()) AND e.type = ANY(w.events) AND e.occurred_at >= w.created_at
	AND event_heard(w.space_id, w.key_id, e.space_id, e.key_id, e.status, e.prev_status))`

// Work reports whether the endpoint has something to send now (a due
// delivery, or an event past its position) and when its next pending
// delivery is due (nil: none).
func (s *Store) Work(ctx context.Context, endpointID int64) (due bool, next *time.Time, err error) {
	err = s.pool.QueryRow(ctx, `SELECT coalesce((SELECT `+heardSQL+` FROM webhook_endpoints w JOIN event_readers r ON r.reader = 'webhook:' || w.id
			WHERE w.id = $1 AND w.enabled), false)
		OR coalesce(bool_or(h.next_try_at IS NULL OR h.next_try_at <= now()), false), min(h.next_try_at)
		FROM (SELECT DISTINCT ON (job_id) next_try_at FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'
		      ORDER BY job_id, id) h`, endpointID).Scan(&due, &next)
	if err != nil {
		return false, nil, fmt.Errorf("webhook endpoint work: %w", err)
	}
	return due, next, nil
}

// WakeStranded queues a wake-up for each enabled endpoint with something to
// send (a due delivery, or an event past its position) and no pump holding
// its reader (its workflow ended some other way, e.g. terminated by an
// operator) and none queued; it reports how many.
func (s *Store) WakeStranded(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_outbox (delivery_id, endpoint_id, job_id)
		SELECT 0, w.id, 0 FROM webhook_endpoints w JOIN event_readers r ON r.reader = 'webhook:' || w.id
		WHERE w.enabled AND (r.lease_until IS NULL OR r.lease_until < now() - interval '10 seconds')
		  AND NOT EXISTS (SELECT FROM webhook_outbox o WHERE o.endpoint_id = w.id)
		  AND (EXISTS (SELECT FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.status = 'pending'
		               AND coalesce(d.next_try_at, d.created_at) <= now() - interval '10 seconds')
		       OR (`+heardSQL+`))`)
	if err != nil {
		return 0, fmt.Errorf("wake stranded webhook endpoints: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
