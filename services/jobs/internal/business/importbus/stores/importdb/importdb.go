// Package importdb is the PostgreSQL store of import sources, their runs and
// the wake-ups owed to their workflows (import_wakes, an outbox).
package importdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/feeds"
)

// Store implements importbus.Storer.
type Store struct {
	pool *pgxpool.Pool
}

// New returns the store over pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// owned is the predicate of owner's sources ($1 space, $2 key) on alias s,
// as webhook endpoints are owned: a space's are every key of the space's.
const owned = `s.space_id = $1 AND (s.space_id <> 0 OR s.key_id = $2)`

const sourceColumns = `s.id, s.space_id, s.key_id, s.trusted, s.kind, s.token, s.url, s.feed_url, s.company, s.city_name, s.tags,
	s.interval_seconds, s.mode, s.etag, s.last_modified, s.next_poll_at, s.last_polled_at, s.last_error, s.created_at`

const runColumns = `r.id, r.source_id, r.started_at, r.finished_at, r.not_modified, r.positions, r.created, r.updated, r.unchanged,
	r.closed, r.errors, r.row_errors, r.error`

// lastRun joins a source's newest run (its columns nullable).
const lastRun = ` LEFT JOIN LATERAL (SELECT ` + runColumns + ` FROM import_runs r WHERE r.source_id = s.id ORDER BY r.id DESC LIMIT 1) lr ON true`

func scanSource(row pgx.Row, withRun bool) (importbus.Source, error) {
	var s importbus.Source
	var secs int
	dst := []any{&s.ID, &s.SpaceID, &s.KeyID, &s.Trusted, &s.Kind, &s.Token, &s.URL, &s.FeedURL, &s.Company, &s.CityName, &s.Tags,
		&secs, &s.Mode, &s.Validators.ETag, &s.Validators.LastModified, &s.NextPollAt, &s.LastPolledAt, &s.LastError, &s.CreatedAt}
	var r nullRun
	if withRun {
		dst = append(dst, r.dst()...)
	}
	if err := row.Scan(dst...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return importbus.Source{}, importbus.ErrNotFound
		}
		return importbus.Source{}, fmt.Errorf("scan import source: %w", err)
	}
	s.Interval = time.Duration(secs) * time.Second
	if withRun && r.id != nil {
		run, err := r.run()
		if err != nil {
			return importbus.Source{}, err
		}
		s.LastRun = &run
	}
	return s, nil
}

// nullRun is a run's columns from a left join.
type nullRun struct {
	id, sourceID                                         *int64
	started, finished                                    *time.Time
	notModified                                          *bool
	positions, created, updated, unchanged, closed, errs *int
	rowErrors                                            []byte
	err                                                  *string
}

func (r *nullRun) dst() []any {
	return []any{&r.id, &r.sourceID, &r.started, &r.finished, &r.notModified, &r.positions, &r.created, &r.updated, &r.unchanged,
		&r.closed, &r.errs, &r.rowErrors, &r.err}
}

func (r *nullRun) run() (importbus.Run, error) {
	out := importbus.Run{ID: *r.id, SourceID: *r.sourceID, StartedAt: *r.started, FinishedAt: *r.finished, NotModified: *r.notModified,
		Positions: *r.positions, Created: *r.created, Updated: *r.updated, Unchanged: *r.unchanged, Closed: *r.closed, Errors: *r.errs,
		Error: r.err}
	if err := json.Unmarshal(r.rowErrors, &out.RowErrors); err != nil {
		return importbus.Run{}, fmt.Errorf("import run %d row errors: %w", out.ID, err)
	}
	return out, nil
}

// Count implements importbus.Storer.
func (s *Store) Count(ctx context.Context, o importbus.Owner) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM import_sources s WHERE `+owned, o.SpaceID, o.KeyID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count import sources: %w", err)
	}
	return n, nil
}

// Create implements importbus.Storer: the source and its first wake-up in
// one statement.
func (s *Store) Create(ctx context.Context, src importbus.Source) (importbus.Source, error) {
	return scanSource(s.pool.QueryRow(ctx, `WITH s AS (
			INSERT INTO import_sources (space_id, key_id, trusted, kind, token, url, feed_url, company, city_name, tags, interval_seconds, mode, next_poll_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *),
		w AS (INSERT INTO import_wakes (source_id) SELECT id FROM s)
		SELECT `+sourceColumns+` FROM s`,
		src.SpaceID, src.KeyID, src.Trusted, src.Kind, src.Token, src.URL, src.FeedURL, src.Company, src.CityName, src.Tags,
		int(src.Interval/time.Second), src.Mode, src.NextPollAt), false)
}

// List implements importbus.Storer.
func (s *Store) List(ctx context.Context, o importbus.Owner) ([]importbus.Source, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sourceColumns+`, lr.* FROM import_sources s`+lastRun+` WHERE `+owned+` ORDER BY s.id`, o.SpaceID, o.KeyID)
	if err != nil {
		return nil, fmt.Errorf("list import sources: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (importbus.Source, error) { return scanSource(r, true) })
}

// Get implements importbus.Storer.
func (s *Store) Get(ctx context.Context, o importbus.Owner, id int64) (importbus.Source, error) {
	return scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceColumns+`, lr.* FROM import_sources s`+lastRun+` WHERE `+owned+` AND s.id = $3`,
		o.SpaceID, o.KeyID, id), true)
}

// Delete implements importbus.Storer: the source (its runs with it) and the
// wake-up that ends its workflow.
func (s *Store) Delete(ctx context.Context, o importbus.Owner, id int64) error {
	var n int
	if err := s.pool.QueryRow(ctx, `WITH d AS (DELETE FROM import_sources s WHERE `+owned+` AND s.id = $3 RETURNING s.id),
		w AS (INSERT INTO import_wakes (source_id) SELECT id FROM d)
		SELECT count(*) FROM d`, o.SpaceID, o.KeyID, id).Scan(&n); err != nil {
		return fmt.Errorf("delete import source: %w", err)
	}
	if n == 0 {
		return importbus.ErrNotFound
	}
	return nil
}

// Sync implements importbus.Storer: due now (a time after the start of any
// poll running, which SaveRun then keeps).
func (s *Store) Sync(ctx context.Context, o importbus.Owner, id int64) (importbus.Source, error) {
	return scanSource(s.pool.QueryRow(ctx, `WITH s AS (
			UPDATE import_sources s SET next_poll_at = now() WHERE `+owned+` AND s.id = $3 RETURNING *),
		w AS (INSERT INTO import_wakes (source_id) SELECT id FROM s)
		SELECT `+sourceColumns+` FROM s`, o.SpaceID, o.KeyID, id), false)
}

// Runs implements importbus.Storer.
func (s *Store) Runs(ctx context.Context, o importbus.Owner, id, before int64, limit int) ([]importbus.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM import_runs r JOIN import_sources s ON s.id = r.source_id
		WHERE `+owned+` AND s.id = $3 AND ($4 = 0 OR r.id < $4) ORDER BY r.id DESC LIMIT $5`, o.SpaceID, o.KeyID, id, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list import runs: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (importbus.Run, error) {
		var r nullRun
		if err := row.Scan(r.dst()...); err != nil {
			return importbus.Run{}, fmt.Errorf("scan import run: %w", err)
		}
		return r.run()
	})
}

// Source implements importbus.Storer.
func (s *Store) Source(ctx context.Context, id int64) (importbus.Source, error) {
	return scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceColumns+` FROM import_sources s WHERE s.id = $1`, id), false)
}

// SaveRun implements importbus.Storer: the run, and the source's next poll,
// last error and (v given) validators, in one statement; ErrNotFound when
// the source was deleted meanwhile (nothing is recorded then). A sync made
// while the poll ran (next_poll_at moved past its start) is kept: the
// source stays due, and the sync's wake-up polls it again.
func (s *Store) SaveRun(ctx context.Context, r importbus.Run, v *feeds.Validators, next time.Time) (importbus.Run, error) {
	rowErrors := r.RowErrors
	if rowErrors == nil {
		rowErrors = []importbus.RowError{}
	}
	b, err := json.Marshal(rowErrors)
	if err != nil {
		return importbus.Run{}, fmt.Errorf("import run row errors: %w", err)
	}
	keep := v == nil
	var etag, lastMod string
	if v != nil {
		etag, lastMod = v.ETag, v.LastModified
	}
	var id int64
	err = s.pool.QueryRow(ctx, `WITH s AS (
			UPDATE import_sources SET next_poll_at = CASE WHEN next_poll_at > $2 THEN next_poll_at ELSE $14 END,
				last_polled_at = $4, last_error = $13,
				etag = CASE WHEN $15 THEN etag ELSE $16 END, last_modified = CASE WHEN $15 THEN last_modified ELSE $17 END
			WHERE id = $1 RETURNING id)
		INSERT INTO import_runs (source_id, started_at, finished_at, not_modified, positions, created, updated, unchanged, closed, errors, row_errors, error)
		SELECT s.id, $2, $4, $3, $5, $6, $7, $8, $9, $10, $11, $12 FROM s RETURNING id`,
		r.SourceID, r.StartedAt, r.NotModified, r.FinishedAt, r.Positions, r.Created, r.Updated, r.Unchanged, r.Closed, r.Errors, b, r.Error,
		r.Error, next, keep, etag, lastMod).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return importbus.Run{}, importbus.ErrNotFound
	}
	if err != nil {
		return importbus.Run{}, fmt.Errorf("save import run: %w", err)
	}
	r.ID = id
	return r, nil
}

// Wakes is import_wakes for outbox.Relay: each row a source to wake.
func (s *Store) Wakes() outbox.Table[int64] {
	return outbox.Table[int64]{DB: s.pool, Name: "import_wakes", Due: "due_at", Columns: []string{"source_id"},
		Payload: func(id *int64) []any { return []any{id} }}
}

// Sources lists every source's id (the worker's start makes sure each has
// its workflow).
func (s *Store) Sources(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM import_sources ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list import source ids: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
