// Package hookdb is the PostgreSQL store of webhook endpoints, their
// deliveries, the webhook outbox and the dispatch of job events to them.
package hookdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
)

// Store implements hookbus.Storer.
type Store struct {
	pool *pgxpool.Pool
}

// New returns the store over pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// owned is the predicate of owner's endpoints ($1 space, $2 key) on alias w.
const owned = `w.space_id = $1 AND (w.space_id <> 0 OR w.key_id = $2)`

const endpointColumns = `w.id, w.space_id, w.key_id, w.url, w.description, w.events, w.email, w.enabled,
	w.disabled_reason, w.failing_since, CASE WHEN w.old_secret_until > now() THEN w.old_secret_until END, w.created_at, w.updated_at`

func scanEndpoint(row pgx.Row) (hookbus.Endpoint, error) {
	var e hookbus.Endpoint
	err := row.Scan(&e.ID, &e.SpaceID, &e.KeyID, &e.URL, &e.Description, &e.Events, &e.Email, &e.Enabled,
		&e.DisabledReason, &e.FailingSince, &e.OldSecretUntil, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return hookbus.Endpoint{}, hookbus.ErrNotFound
	}
	if err != nil {
		return hookbus.Endpoint{}, fmt.Errorf("select webhook endpoint: %w", err)
	}
	return e, nil
}

// Count implements hookbus.Storer.
func (s *Store) Count(ctx context.Context, o hookbus.Owner) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints w WHERE `+owned, o.SpaceID, o.KeyID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count webhook endpoints: %w", err)
	}
	return n, nil
}

// Create implements hookbus.Storer.
func (s *Store) Create(ctx context.Context, o hookbus.Owner, e hookbus.Endpoint) (hookbus.Endpoint, error) {
	// The endpoint's reader starts at the horizon: it is sent what commits
	// from now on (and occurred since it was created, Pump's filter).
	out, err := scanEndpoint(s.pool.QueryRow(ctx, `WITH w AS (INSERT INTO webhook_endpoints AS w (space_id, key_id, url, description, events, email, secret)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *),
	r AS (INSERT INTO event_readers (reader, xid, seq) SELECT 'webhook:' || w.id, `+eventdb.HorizonPosition+` FROM w)
	SELECT `+endpointColumns+` FROM w`,
		o.SpaceID, o.KeyID, e.URL, e.Description, e.Events, e.Email, e.Secret))
	if err != nil {
		return hookbus.Endpoint{}, err
	}
	out.Secret = e.Secret
	return out, nil
}

// List implements hookbus.Storer.
func (s *Store) List(ctx context.Context, o hookbus.Owner) ([]hookbus.Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints w WHERE `+owned+` ORDER BY w.id`, o.SpaceID, o.KeyID)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hookbus.Endpoint, error) { return scanEndpoint(r) })
}

// Get implements hookbus.Storer.
func (s *Store) Get(ctx context.Context, o hookbus.Owner, id int64) (hookbus.Endpoint, error) {
	return scanEndpoint(s.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints w WHERE `+owned+` AND w.id = $3`,
		o.SpaceID, o.KeyID, id))
}

// Update implements hookbus.Storer. Enabling an endpoint clears why it was
// disabled and its failing streak.
func (s *Store) Update(ctx context.Context, o hookbus.Owner, id int64, in hookbus.Input) (hookbus.Endpoint, error) {
	// Enabling a disabled endpoint moves its reader to the horizon: what
	// happened while it was off is the owner's to recover (as before).
	return scanEndpoint(s.pool.QueryRow(ctx, `WITH prev AS (SELECT w.id, w.enabled FROM webhook_endpoints w WHERE `+owned+` AND w.id = $3),
	r AS (UPDATE event_readers r SET (xid, seq) = (SELECT `+eventdb.HorizonPosition+`), failures = 0, paused_until = NULL
		FROM prev WHERE r.reader = 'webhook:' || prev.id AND $9 AND NOT prev.enabled)
	UPDATE webhook_endpoints w SET
		url = coalesce($4, w.url), description = coalesce($5, w.description), events = coalesce($6, w.events),
		email = CASE WHEN $8 THEN NULL ELSE coalesce($7, w.email) END,
		enabled = coalesce($9, w.enabled),
		disabled_reason = CASE WHEN $9 IS NULL THEN w.disabled_reason WHEN $9 THEN NULL ELSE 'disabled by its owner' END,
		failing_since = CASE WHEN $9 THEN NULL ELSE w.failing_since END,
		updated_at = now()
		WHERE `+owned+` AND w.id = $3 RETURNING `+endpointColumns,
		o.SpaceID, o.KeyID, id, in.URL, in.Description, in.Events, in.Email, in.ClearEmail, in.Enabled))
}

// Delete implements hookbus.Storer.
func (s *Store) Delete(ctx context.Context, o hookbus.Owner, id int64) error {
	var n int
	err := s.pool.QueryRow(ctx, `WITH w AS (DELETE FROM webhook_endpoints w WHERE `+owned+` AND w.id = $3 RETURNING id),
		r AS (DELETE FROM event_readers r USING w WHERE r.reader = 'webhook:' || w.id)
		SELECT count(*) FROM w`, o.SpaceID, o.KeyID, id).Scan(&n)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint: %w", err)
	}
	if n == 0 {
		return hookbus.ErrNotFound
	}
	return nil
}

// Rotate implements hookbus.Storer.
func (s *Store) Rotate(ctx context.Context, o hookbus.Owner, id int64, secret string, overlap time.Duration) (hookbus.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `UPDATE webhook_endpoints w SET old_secret = w.secret, secret = $4,
		old_secret_until = now() + make_interval(secs => $5), updated_at = now()
		WHERE `+owned+` AND w.id = $3 RETURNING `+endpointColumns, o.SpaceID, o.KeyID, id, secret, overlap.Seconds()))
	if err != nil {
		return hookbus.Endpoint{}, err
	}
	e.Secret = secret
	return e, nil
}

const deliveryColumns = `d.id, d.endpoint_id, d.event_id::text, d.msg_id, d.type, d.job_id, d.version, d.occurred_at, d.replay,
	d.status, d.attempts, d.response_status, d.response_body, d.latency_ms, d.last_error, d.next_try_at, d.created_at, d.finished_at`

func scanDelivery(row pgx.Row) (hookbus.Delivery, error) {
	var d hookbus.Delivery
	err := row.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.MsgID, &d.Type, &d.JobID, &d.Version, &d.OccurredAt, &d.Replay,
		&d.Status, &d.Attempts, &d.ResponseStatus, &d.ResponseBody, &d.LatencyMS, &d.LastError, &d.NextTryAt, &d.CreatedAt, &d.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return hookbus.Delivery{}, hookbus.ErrNotFound
	}
	if err != nil {
		return hookbus.Delivery{}, fmt.Errorf("select webhook delivery: %w", err)
	}
	return d, nil
}

// queued inserts the deliveries a CTE "new" selects (endpoint_id, event_id,
// msg_id, type, job_id, version, occurred_at, replay, ord) in ord order, and
// one outbox row per endpoint that wakes its workflow (job_id 0: the pump
// takes every job's deliveries), in one statement.
const queued = `, ins AS (
    INSERT INTO webhook_deliveries (endpoint_id, event_id, msg_id, type, job_id, version, occurred_at, replay)
    SELECT endpoint_id, event_id, msg_id, type, job_id, version, occurred_at, replay FROM new ORDER BY ord
    ON CONFLICT DO NOTHING
    RETURNING *
), ob AS (
    INSERT INTO webhook_outbox (delivery_id, endpoint_id, job_id)
    SELECT max(id), endpoint_id, 0 FROM ins GROUP BY endpoint_id
)
`

// Ping implements hookbus.Storer.
func (s *Store) Ping(ctx context.Context, o hookbus.Owner, id int64, msgID string) (hookbus.Delivery, error) {
	return scanDelivery(s.pool.QueryRow(ctx, `WITH new AS (
		SELECT w.id AS endpoint_id, NULL::uuid AS event_id, $4::text AS msg_id, '`+hookbus.TypePing+`' AS type, 0::bigint AS job_id,
		       0::bigint AS version, now() AS occurred_at, true AS replay, 1 AS ord
		FROM webhook_endpoints w WHERE `+owned+` AND w.id = $3
	)`+queued+`SELECT `+deliveryColumns+` FROM ins d`, o.SpaceID, o.KeyID, id, msgID))
}

// Redeliver implements hookbus.Storer.
func (s *Store) Redeliver(ctx context.Context, o hookbus.Owner, id, deliveryID int64) (hookbus.Delivery, error) {
	return scanDelivery(s.pool.QueryRow(ctx, `WITH new AS (
		SELECT d.endpoint_id, d.event_id, d.msg_id, d.type, d.job_id, d.version, d.occurred_at, true AS replay, 1 AS ord
		FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
		WHERE `+owned+` AND w.id = $3 AND d.id = $4
	)`+queued+`SELECT `+deliveryColumns+` FROM ins d`, o.SpaceID, o.KeyID, id, deliveryID))
}

// Recover implements hookbus.Storer: the events the endpoint hears of
// and subscribes to since since, in commit order.
func (s *Store) Recover(ctx context.Context, o hookbus.Owner, id int64, since time.Time, limit int) (int, error) {
	if _, err := s.Get(ctx, o, id); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH new AS (
		SELECT w.id AS endpoint_id, e.id AS event_id, e.id::text AS msg_id, e.type, e.job_id, e.version, e.occurred_at,
		       true AS replay, row_number() OVER (ORDER BY e.xid, e.seq) AS ord
		FROM webhook_endpoints w JOIN job_events e ON e.type = ANY(w.events)
		     AND event_heard(w.space_id, w.key_id, e.space_id, e.key_id, e.status, e.prev_status)
		WHERE `+owned+` AND w.id = $3 AND e.occurred_at >= $4
		  AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY e.xid, e.seq LIMIT $5
	)`+queued+`SELECT count(*) FROM ins`, o.SpaceID, o.KeyID, id, since, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("recover webhook deliveries: %w", err)
	}
	return n, nil
}

// Deliveries implements hookbus.Storer.
func (s *Store) Deliveries(ctx context.Context, o hookbus.Owner, id, before int64, limit int) ([]hookbus.Delivery, error) {
	if _, err := s.Get(ctx, o, id); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d
		WHERE d.endpoint_id = $1 AND ($2 = 0 OR d.id < $2) ORDER BY d.id DESC LIMIT $3`, id, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hookbus.Delivery, error) { return scanDelivery(r) })
}
