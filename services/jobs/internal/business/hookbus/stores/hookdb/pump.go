package hookdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// Due is what a pump round takes: the endpoint with its secrets and the
// oldest pending delivery of each of its jobs that is due.
type Due struct {
	Endpoint   hookbus.Endpoint
	Secret     string
	OldSecret  string // "" when none signs beside Secret
	Deliveries []hookbus.Delivery
}

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

// ErrLeaseLost: another pump holds the endpoint's lease.
var ErrLeaseLost = errors.New("another pump holds the endpoint")

// TakeDue returns the endpoint and up to limit due deliveries (one per
// job, none of the jobs in busy) for the pump owner; ErrNotFound when the
// endpoint is gone, ErrLeaseLost when another pump leased it. A disabled
// endpoint comes without deliveries.
func (s *Store) TakeDue(ctx context.Context, endpointID int64, owner string, busy []int64, limit int) (Due, error) {
	var d Due
	var old, holder *string
	e := &d.Endpoint
	err := s.pool.QueryRow(ctx, `SELECT w.pump_owner, w.secret, CASE WHEN w.old_secret_until > now() THEN w.old_secret END, `+endpointColumns+`
		FROM webhook_endpoints w WHERE w.id = $1`, endpointID).Scan(&holder, &d.Secret, &old,
		&e.ID, &e.SpaceID, &e.KeyID, &e.URL, &e.Description, &e.Events, &e.Email, &e.Enabled,
		&e.DisabledReason, &e.FailingSince, &e.OldSecretUntil, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Due{}, hookbus.ErrNotFound
	}
	if err != nil {
		return Due{}, fmt.Errorf("select webhook endpoint: %w", err)
	}
	if holder != nil && *holder != owner {
		return Due{}, ErrLeaseLost
	}
	if old != nil {
		d.OldSecret = *old
	}
	if !e.Enabled {
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

// Lease marks the endpoint's pump owner running for ttl: the dispatch does
// not wake it meanwhile. take: a pump starting takes the lease whoever
// held it (Temporal runs a pump again only when it presumes the last one
// dead); otherwise it is renewed only by its owner (ErrLeaseLost).
func (s *Store) Lease(ctx context.Context, endpointID int64, owner string, ttl time.Duration, take bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET pump_until = now() + make_interval(secs => $2), pump_owner = $3
		WHERE id = $1 AND ($4 OR pump_owner IS NULL OR pump_owner = $3)`, endpointID, ttl.Seconds(), owner, take)
	if err != nil {
		return fmt.Errorf("webhook pump lease: %w", err)
	}
	if tag.RowsAffected() == 0 && !take {
		return ErrLeaseLost
	}
	return nil
}

// Release ends the pump's lease once every dispatch round that saw it has
// committed (PumpLock), and then reports whether a delivery is due (the
// pump goes on) and when the next pending one is (nil: none).
func (s *Store) Release(ctx context.Context, endpointID int64, owner string) (due bool, next *time.Time, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, PumpLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET pump_until = NULL, pump_owner = NULL WHERE id = $1 AND pump_owner = $2`,
			endpointID, owner)
		return err
	})
	if err != nil {
		return false, nil, fmt.Errorf("webhook pump release: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT coalesce(bool_or(next_try_at IS NULL OR next_try_at <= now()), false), min(next_try_at)
		FROM (SELECT DISTINCT ON (job_id) next_try_at FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'
		      ORDER BY job_id, id) h`, endpointID).Scan(&due, &next)
	if err != nil {
		return false, nil, fmt.Errorf("webhook pump release: %w", err)
	}
	return due, next, nil
}

// WakeStranded queues a wake-up for each endpoint with a due delivery and
// no pump holding its lease (its workflow ended some other way, e.g.
// terminated by an operator) and none queued; it reports how many.
func (s *Store) WakeStranded(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_outbox (delivery_id, endpoint_id, job_id)
		SELECT max(d.id), d.endpoint_id, 0 FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE d.status = 'pending' AND coalesce(d.next_try_at, d.created_at) <= now() - interval '10 seconds'
		  AND w.enabled AND (w.pump_until IS NULL OR w.pump_until < now())
		  AND NOT EXISTS (SELECT FROM webhook_outbox o WHERE o.endpoint_id = d.endpoint_id)
		GROUP BY d.endpoint_id`)
	if err != nil {
		return 0, fmt.Errorf("wake stranded webhook endpoints: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
