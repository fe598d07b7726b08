// Package eventdb stores events in PostgreSQL.
package eventdb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
)

// Store is the events table.
type Store struct{ db pg.Store }

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{db: pg.NewStore(pool)} }

// WithReads sends Count and Query where reads sends them (the replica of
// DATABASE_READ_URL): events are written by the seed alone, so no reader
// waits for a write of its own.
func (s *Store) WithReads(reads *pg.Reads) *Store { return &Store{db: s.db.WithReads(reads)} }

const columns = `id, slug, title, summary, description, starts_at, ends_at, timezone, is_online,
	online_url, venue_name, venue_address, city_name, city_slug, space_id, space_name,
	registration_url, is_free, tags, created_at, updated_at`

type row struct {
	ID              int64
	Slug            string
	Title           string
	Summary         string
	Description     string
	StartsAt        time.Time
	EndsAt          time.Time
	Timezone        string
	IsOnline        bool
	OnlineURL       *string
	VenueName       *string
	VenueAddress    *string
	CityName        *string
	CitySlug        *string
	SpaceID         *int64
	SpaceName       *string
	RegistrationURL *string
	IsFree          bool
	Tags            []string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

func (r row) toBus() eventbus.Event {
	e := eventbus.Event{
		ID: r.ID, Slug: r.Slug, Title: r.Title, Summary: r.Summary, Description: r.Description,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt, Timezone: r.Timezone, Online: r.IsOnline,
		OnlineURL: deref(r.OnlineURL), VenueName: deref(r.VenueName), VenueAddress: deref(r.VenueAddress),
		CityName: deref(r.CityName), CitySlug: deref(r.CitySlug), SpaceName: deref(r.SpaceName),
		RegistrationURL: deref(r.RegistrationURL), IsFree: r.IsFree, Tags: r.Tags,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.SpaceID != nil {
		e.SpaceID = *r.SpaceID
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	return e
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func null(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// where builds the WHERE clause of a filter with numbered arguments.
func where(f eventbus.Filter) *pg.Where {
	var w pg.Where
	if f.From != nil {
		w.And("ends_at >= " + w.Arg(*f.From))
	} else {
		w.And("ends_at >= " + w.Arg(f.Now))
	}
	if f.To != nil {
		w.And("starts_at < " + w.Arg(*f.To))
	}
	if f.CitySlug != "" {
		w.And("city_slug = " + w.Arg(f.CitySlug))
	}
	if f.SpaceID != 0 {
		w.And("space_id = " + w.Arg(f.SpaceID))
	}
	return &w
}

// Count counts the events that match f.
// Changed implements eventbus.Storer. Events are never deleted: the list
// moves with a write or when an event ends.
func (s *Store) Changed(ctx context.Context, now time.Time) (time.Time, error) {
	var t time.Time
	err := s.db.Read(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, `SELECT least($1::timestamptz, greatest(coalesce(max(updated_at), 'epoch'),
			coalesce(max(ends_at) FILTER (WHERE ends_at <= $1), 'epoch'))) FROM events`, now).Scan(&t)
	})
	if err != nil {
		return t, fmt.Errorf("events changed: %w", err)
	}
	return t, nil
}

func (s *Store) Count(ctx context.Context, f eventbus.Filter) (int, error) {
	w := where(f)
	var n int
	if err := s.db.Read(ctx, func(db *pgxpool.Pool) error {
		return db.QueryRow(ctx, "SELECT count(*) FROM events WHERE "+w.String(), w.Args()...).Scan(&n)
	}); err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}

// Query returns one page of the events that match f, soonest first.
func (s *Store) Query(ctx context.Context, f eventbus.Filter, offset, limit int) ([]eventbus.Event, error) {
	w := where(f)
	q := "SELECT " + columns + " FROM events WHERE " + w.String() +
		" ORDER BY starts_at, id LIMIT " + w.Arg(limit) + " OFFSET " + w.Arg(offset)
	var rs []row
	if err := s.db.Read(ctx, func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, q, w.Args()...)
		if err != nil {
			return fmt.Errorf("query events: %w", err)
		}
		rs, err = pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		if err != nil {
			return fmt.Errorf("scan events: %w", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]eventbus.Event, len(rs))
	for i, r := range rs {
		out[i] = r.toBus()
	}
	return out, nil
}

// Upsert creates the event or updates the one with the same slug.
func (s *Store) Upsert(ctx context.Context, e eventbus.Event) (eventbus.Event, error) {
	var space *int64
	if e.SpaceID != 0 {
		space = &e.SpaceID
	}
	rows, err := s.db.Pool.Query(ctx, `
		INSERT INTO events (slug, title, summary, description, starts_at, ends_at, timezone, is_online,
			online_url, venue_name, venue_address, city_name, city_slug, space_id, space_name,
			registration_url, is_free, tags)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)
		ON CONFLICT (slug) DO UPDATE SET title = EXCLUDED.title, summary = EXCLUDED.summary,
			description = EXCLUDED.description, starts_at = EXCLUDED.starts_at, ends_at = EXCLUDED.ends_at,
			timezone = EXCLUDED.timezone, is_online = EXCLUDED.is_online, online_url = EXCLUDED.online_url,
			venue_name = EXCLUDED.venue_name, venue_address = EXCLUDED.venue_address,
			city_name = EXCLUDED.city_name, city_slug = EXCLUDED.city_slug, space_id = EXCLUDED.space_id,
			space_name = EXCLUDED.space_name, registration_url = EXCLUDED.registration_url,
			is_free = EXCLUDED.is_free, tags = EXCLUDED.tags, updated_at = now()
		RETURNING `+columns,
		e.Slug, e.Title, e.Summary, e.Description, e.StartsAt, e.EndsAt, e.Timezone, e.Online,
		null(e.OnlineURL), null(e.VenueName), null(e.VenueAddress), null(e.CityName), null(e.CitySlug),
		space, null(e.SpaceName), null(e.RegistrationURL), e.IsFree, e.Tags)
	if err != nil {
		return eventbus.Event{}, fmt.Errorf("upsert event: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return eventbus.Event{}, fmt.Errorf("upsert event: %w", err)
	}
	return r.toBus(), nil
}
