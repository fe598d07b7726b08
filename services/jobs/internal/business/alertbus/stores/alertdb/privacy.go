package alertdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
)

// DeleteAddress deletes every alert of an address, with their matches and
// queued mails, and the address itself (this service's part of an erasure);
// it reports how many alerts went.
func (s *Store) DeleteAddress(ctx context.Context, email string) (int, error) {
	return s.EraseAddress(ctx, email, "")
}

// EraseAddress is DeleteAddress and, when token is not empty, a row of
// privacy_outbox in the same transaction: the erasure is handed on to
// community (the newsletter) whatever happens next.
func (s *Store) EraseAddress(ctx context.Context, email, token string) (int, error) {
	var n int
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		n, err = s.erase(ctx, privacy.Normalize(email), token)
		// an alert saved for the address between the two deletes: erase it too
		if !pg.IsForeignKeyViolation(err) {
			break
		}
	}
	if err != nil {
		return 0, fmt.Errorf("erase an address's alerts: %w", err)
	}
	return n, nil
}

func (s *Store) erase(ctx context.Context, email, token string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var ids []int64
		err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM alerts WHERE address_id = (SELECT id FROM alert_addresses WHERE email = $1)
			RETURNING id) SELECT coalesce(array_agg(id), '{}') FROM d`, email).Scan(&ids)
		if err != nil {
			return err
		}
		n = len(ids)
		if _, err := tx.Exec(ctx, `DELETE FROM alert_outbox WHERE alert_id = ANY($1)`, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM alert_addresses WHERE email = $1`, email); err != nil {
			return err
		}
		if token == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO privacy_outbox (token) VALUES ($1)`, token)
		return err
	})
	return n, err
}

// Export lists everything held about an address: its alerts (none: an
// empty list) and whether its address row exists.
func (s *Store) Export(ctx context.Context, email string) (held bool, alerts []alertbus.AlertExport, err error) {
	email = privacy.Normalize(email)
	var id int64
	err = s.pool.QueryRow(ctx, `SELECT id FROM alert_addresses WHERE email = $1`, email).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, []alertbus.AlertExport{}, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("export an address: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT a.search, a.frequency, a.time_zone, a.paused, a.created_at, a.confirmed_at,
		(SELECT count(*) FROM alert_matches m WHERE m.alert_id = a.id),
		(SELECT count(*) FROM alert_matches m WHERE m.alert_id = a.id AND m.sent_at IS NOT NULL)
		FROM alerts a WHERE a.address_id = $1 ORDER BY a.id`, id)
	if err != nil {
		return false, nil, fmt.Errorf("export an address's alerts: %w", err)
	}
	alerts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (alertbus.AlertExport, error) {
		var e alertbus.AlertExport
		return e, r.Scan(&e.Search, &e.Frequency, &e.TimeZone, &e.Paused, &e.CreatedAt, &e.ConfirmedAt, &e.Matches, &e.Mailed)
	})
	if err != nil {
		return false, nil, fmt.Errorf("export an address's alerts: %w", err)
	}
	return true, alerts, nil
}

// PrivacyItem is one erasure to hand to community: the sealed address.
type PrivacyItem struct{ Token string }

// PrivacyOutboxTable is privacy_outbox for outbox.Relay.
func (s *Store) PrivacyOutboxTable() outbox.Table[PrivacyItem] {
	return outbox.Table[PrivacyItem]{DB: s.pool, Name: "privacy_outbox", Due: "next_try_at",
		Columns: []string{"token"}, Payload: func(it *PrivacyItem) []any { return []any{&it.Token} }}
}

// PrivacyOutboxLen counts the erasures not yet handed over (tests, the admin command).
func (s *Store) PrivacyOutboxLen(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM privacy_outbox`).Scan(&n)
	return n, err
}
