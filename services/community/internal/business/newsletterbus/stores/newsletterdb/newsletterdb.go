// Package newsletterdb stores subscribers and the newsletter outbox in PostgreSQL.
package newsletterdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Store is the subscribers and newsletter_outbox tables.
type Store struct{ pool *pgxpool.Pool }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const columns = `id, email, coalesce(name, ''), coalesce(source, ''), status, consent_at,
	coalesce(consent_ip, ''), consent_version, mail_requested_at, request_seq, mail_sent_at, mails_sent,
	confirmed_at, unsubscribed_at, created_at`

func scan(r pgx.Row) (newsletterbus.Subscriber, error) {
	var s newsletterbus.Subscriber
	err := r.Scan(&s.ID, &s.Email, &s.Name, &s.Source, &s.Status, &s.ConsentAt, &s.ConsentIP,
		&s.ConsentVersion, &s.MailRequestedAt, &s.RequestSeq, &s.MailSentAt, &s.MailsSent,
		&s.ConfirmedAt, &s.UnsubscribedAt, &s.CreatedAt)
	return s, err
}

func null(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ChangeByEmail implements newsletterbus.Storer. Two first subscriptions of
// one address racing each other meet on the unique email; the loser runs
// again and sees the winner's row.
func (s *Store) ChangeByEmail(ctx context.Context, email string, decide newsletterbus.Decide) (newsletterbus.Subscriber, error) {
	for attempt := 0; ; attempt++ {
		sub, err := s.change(ctx, "email = $1", email, decide)
		if pg.IsUniqueViolation(err) && attempt < 2 {
			continue
		}
		return sub, err
	}
}

// ChangeByID implements newsletterbus.Storer.
func (s *Store) ChangeByID(ctx context.Context, id int64, decide newsletterbus.Decide) (newsletterbus.Subscriber, error) {
	return s.change(ctx, "id = $1", id, decide)
}

func (s *Store) change(ctx context.Context, cond string, key any, decide newsletterbus.Decide) (newsletterbus.Subscriber, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return newsletterbus.Subscriber{}, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	var cur *newsletterbus.Subscriber
	found, err := scan(tx.QueryRow(ctx, "SELECT "+columns+" FROM subscribers WHERE "+cond+" FOR UPDATE", key))
	switch {
	case err == nil:
		cur = &found
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return newsletterbus.Subscriber{}, fmt.Errorf("lock subscriber: %w", err)
	}
	plan, err := decide(cur)
	if err != nil {
		return newsletterbus.Subscriber{}, err
	}
	if !plan.Write {
		if cur == nil {
			return newsletterbus.Subscriber{}, nil
		}
		return *cur, nil
	}
	n := plan.Next
	var saved newsletterbus.Subscriber
	if cur == nil {
		saved, err = scan(tx.QueryRow(ctx, `
			INSERT INTO subscribers (email, name, source, status, consent_at, consent_ip, consent_version,
				mail_requested_at, request_seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+columns,
			n.Email, null(n.Name), null(n.Source), n.Status, n.ConsentAt, null(n.ConsentIP), n.ConsentVersion,
			n.MailRequestedAt, n.RequestSeq))
	} else {
		saved, err = scan(tx.QueryRow(ctx, `
			UPDATE subscribers SET name = $2, source = $3, status = $4, consent_at = $5, consent_ip = $6,
				consent_version = $7, mail_requested_at = $8, request_seq = $9, confirmed_at = $10,
				unsubscribed_at = $11, updated_at = now()
			WHERE id = $1 RETURNING `+columns,
			cur.ID, null(n.Name), null(n.Source), n.Status, n.ConsentAt, null(n.ConsentIP), n.ConsentVersion,
			n.MailRequestedAt, n.RequestSeq, n.ConfirmedAt, n.UnsubscribedAt))
	}
	if err != nil {
		return newsletterbus.Subscriber{}, fmt.Errorf("write subscriber: %w", err)
	}
	if plan.Outbox != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO newsletter_outbox (kind, subscriber_id, email, request_seq)
			VALUES ($1, $2, $3, $4)`, plan.Outbox, saved.ID, saved.Email, saved.RequestSeq); err != nil {
			return newsletterbus.Subscriber{}, fmt.Errorf("queue outbox: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return newsletterbus.Subscriber{}, fmt.Errorf("commit: %w", err)
	}
	return saved, nil
}

// Get implements newsletterbus.Storer.
func (s *Store) Get(ctx context.Context, id int64) (newsletterbus.Subscriber, error) {
	sub, err := scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM subscribers WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return newsletterbus.Subscriber{}, newsletterbus.ErrNotFound
	}
	if err != nil {
		return newsletterbus.Subscriber{}, fmt.Errorf("get subscriber: %w", err)
	}
	return sub, nil
}

// GetByEmail returns the subscriber of an address (tests and tools use it).
func (s *Store) GetByEmail(ctx context.Context, email string) (newsletterbus.Subscriber, error) {
	sub, err := scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM subscribers WHERE email = $1",
		newsletterbus.NormalizeEmail(email)))
	if errors.Is(err, pgx.ErrNoRows) {
		return newsletterbus.Subscriber{}, newsletterbus.ErrNotFound
	}
	if err != nil {
		return newsletterbus.Subscriber{}, fmt.Errorf("get subscriber: %w", err)
	}
	return sub, nil
}

// MarkMailSent implements newsletterbus.Storer.
func (s *Store) MarkMailSent(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE subscribers SET mail_sent_at = $2, mails_sent = mails_sent + 1
		WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("mark mail sent: %w", err)
	}
	return nil
}

// DeletePending implements newsletterbus.Storer.
func (s *Store) DeletePending(ctx context.Context, id int64, maxSeq int) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM subscribers WHERE id = $1 AND status = 'pending'
		AND request_seq <= $2`, id, maxSeq)
	if err != nil {
		return false, fmt.Errorf("delete pending: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// OutboxTable is newsletter_outbox for outbox.Relay. An address's rows keep
// their order: its workflow must see a request before the confirmation.
func (s *Store) OutboxTable() outbox.Table[newsletterbus.OutboxItem] {
	return outbox.Table[newsletterbus.OutboxItem]{DB: s.pool, Name: "newsletter_outbox", Due: "next_attempt_at",
		Columns: []string{"kind", "subscriber_id", "email", "request_seq"},
		Payload: func(it *newsletterbus.OutboxItem) []any {
			return []any{&it.Kind, &it.SubscriberID, &it.Email, &it.RequestSeq}
		},
		Key: func(it newsletterbus.OutboxItem) string { return it.Email }}
}

// OutboxLen counts rows not yet delivered (metrics and tests).
func (s *Store) OutboxLen(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, "SELECT count(*) FROM newsletter_outbox").Scan(&n)
	return n, err
}

// ExportAddress implements newsletterbus.AddressStore: the subscriber of an
// address (nil: none) and its feedback messages.
func (s *Store) ExportAddress(ctx context.Context, email string) (*newsletterbus.Subscriber, int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM feedback WHERE lower(btrim(email)) = $1`, email).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("export feedback: %w", err)
	}
	sub, err := s.GetByEmail(ctx, email)
	if errors.Is(err, newsletterbus.ErrNotFound) {
		return nil, n, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return &sub, n, nil
}

// EraseAddress implements newsletterbus.AddressStore: the subscriber row
// (its consent evidence with it), its queued outbox rows, and the address
// of its feedback messages (the messages stay, anonymous), in one
// transaction. A running opt-in workflow then finds no subscriber and
// sends nothing.
func (s *Store) EraseAddress(ctx context.Context, email string) (newsletterbus.Erased, error) {
	var out newsletterbus.Erased
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM subscribers WHERE email = $1`, email)
		if err != nil {
			return err
		}
		out.Subscriber = tag.RowsAffected() > 0
		if _, err := tx.Exec(ctx, `DELETE FROM newsletter_outbox WHERE email = $1`, email); err != nil {
			return err
		}
		tag, err = tx.Exec(ctx, `UPDATE feedback SET email = NULL WHERE lower(btrim(email)) = $1`, email)
		out.Feedback = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return newsletterbus.Erased{}, fmt.Errorf("erase an address: %w", err)
	}
	return out, nil
}
