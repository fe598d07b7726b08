package hookdb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventpos"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// dispatchSQL reads the next committed events ($1 limit) past the shared
// wake position and queues a wake-up for each enabled endpoint that
// subscribes to one of them, hears of it, has no runner holding its reader,
// is not paused (its due retries wake it) and has no wake-up queued; it moves the wake position. It writes nothing per
// delivery: each endpoint reads the events from its own position.
var dispatchSQL = `WITH ` + eventpos.Events("webhook_dispatch") + `,
wake AS (
    SELECT DISTINCT w.id FROM evs e
    JOIN webhook_endpoints w ON w.enabled AND e.type = ANY(w.events) AND e.occurred_at >= w.created_at
         AND event_heard(w.space_id, w.key_id, e.space_id, e.key_id, e.status, e.prev_status)
    LEFT JOIN event_readers r ON r.reader = 'webhook:' || w.id
    WHERE (r.lease_until IS NULL OR r.lease_until < now()) AND NOT ` + PausedSQL + `
), ob AS (
    INSERT INTO webhook_outbox (delivery_id, endpoint_id, job_id)
    SELECT 0, k.id, 0 FROM wake k WHERE NOT EXISTS (SELECT FROM webhook_outbox o WHERE o.endpoint_id = k.id)
    RETURNING 1
), ` + eventpos.Move("webhook_dispatch") + `
SELECT (SELECT count(*) FROM evs), (SELECT count(*) FROM ob)`

// Dispatch runs one round of the wake-ups and reports how many events it
// read and endpoints it woke.
func (s *Store) Dispatch(ctx context.Context, limit int) (events, woken int, err error) {
	err = eventpos.Round(ctx, s.pool, "webhook_dispatch", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, PumpLock); err != nil {
			return err
		}
		return tx.QueryRow(ctx, dispatchSQL, limit).Scan(&events, &woken)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("dispatch job events: %w", err)
	}
	return events, woken, nil
}

// PumpLock is the advisory lock that orders a dispatch round (shared)
// before a pump's release of its reader (exclusive): a round that saw the
// lease and queued no wake-up has committed before the pump looks for work
// one last time.
const PumpLock = 35_0001

// OutboxTable is webhook_outbox for outbox.Relay: each row wakes the
// workflow of its endpoint, whose pump reads the events from its position.
func (s *Store) OutboxTable() outbox.Table[OutboxItem] {
	return outbox.Table[OutboxItem]{DB: s.pool, Name: "webhook_outbox", Due: "next_try_at",
		Columns: []string{"delivery_id", "endpoint_id", "job_id"},
		Payload: func(it *OutboxItem) []any { return []any{&it.DeliveryID, &it.EndpointID, &it.JobID} },
		Key: func(it OutboxItem) string {
			return strconv.FormatInt(it.EndpointID, 10)
		}}
}

// Succeeded clears the endpoint's failing streak.
func (s *Store) Succeeded(ctx context.Context, endpointID int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, endpointID)
	if err != nil {
		return fmt.Errorf("clear failing streak: %w", err)
	}
	return nil
}

// Failed starts (or continues) the endpoint's failing streak and reports
// since when it fails.
func (s *Store) Failed(ctx context.Context, endpointID int64) (since int64, err error) {
	err = s.pool.QueryRow(ctx, `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()) WHERE id = $1
		RETURNING extract(epoch FROM failing_since)::bigint`, endpointID).Scan(&since)
	if err != nil {
		return 0, fmt.Errorf("failing streak: %w", err)
	}
	return since, nil
}

// Disable turns the endpoint off with the reason GET /v2/webhooks/{id}
// shows; false when it was already off.
func (s *Store) Disable(ctx context.Context, endpointID int64, reason string) (bool, error) {
	// One statement: the owner's mail (when there is an address) is queued
	// with the change, and only by the call that made it.
	var n int
	err := s.pool.QueryRow(ctx, `WITH d AS (
		UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
		WHERE id = $1 AND enabled RETURNING id, email, url),
	m AS (INSERT INTO webhook_mail_outbox (endpoint_id, email, url, reason)
		SELECT id, email, url, $2 FROM d WHERE email IS NOT NULL AND email <> '')
	SELECT count(*) FROM d`, endpointID, reason).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("disable webhook endpoint: %w", err)
	}
	return n == 1, nil
}

// MailOutbox is webhook_mail_outbox for outbox.Relay.
func (s *Store) MailOutbox() outbox.Table[DisabledMail] {
	return outbox.Table[DisabledMail]{DB: s.pool, Name: "webhook_mail_outbox", Due: "next_try_at",
		Columns: []string{"endpoint_id", "email", "url", "reason"},
		Payload: func(m *DisabledMail) []any { return []any{&m.EndpointID, &m.Email, &m.URL, &m.Reason} }}
}

// The delivery's types are hookbus's (DeliveryStorer).
type (
	OutboxItem   = hookbus.OutboxItem
	Attempt      = hookbus.Attempt
	DisabledMail = hookbus.DisabledMail
	Due          = hookbus.Due
	Queued       = hookbus.Queued
)

var _ hookbus.DeliveryStorer = (*Store)(nil)
