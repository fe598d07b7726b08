// Package statsdb stores job statistics in PostgreSQL (migration 00047):
// raw events, the day's visitors for the uniques, and the daily roll-ups.
package statsdb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// Store is the statistics' storage.
type Store struct{ pool *pgxpool.Pool }

// New returns a store on pool (whose search_path is the jobs schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

type dailyKey struct {
	job     int64
	day     time.Time
	channel string
	kind    statsbus.Kind
	agent   statsbus.Agent
}

type visitorKey struct {
	job     int64
	day     time.Time
	kind    statsbus.Kind
	channel string
	visitor int64
}

func date(t time.Time) pgtype.Date { return pgtype.Date{Time: statsbus.Day(t), Valid: true} }

// Write stores a batch in one transaction: the raw events, the visitors
// new on their day, and the roll-ups (events, and uniques counted from the
// new visitors). Rows are written in key order, so that replicas writing at
// once wait on each other instead of deadlocking.
func (s *Store) Write(ctx context.Context, events []statsbus.Event) error {
	if len(events) == 0 {
		return nil
	}
	daily := map[dailyKey]*[2]int64{}
	visitors := map[visitorKey]struct{}{}
	for _, e := range events {
		day := statsbus.Day(e.At)
		k := dailyKey{e.JobID, day, e.Channel, e.Kind, e.Agent}
		v := daily[k]
		if v == nil {
			v = &[2]int64{}
			daily[k] = v
		}
		v[0] += int64(max(e.N, 1))
		if e.Visitor != 0 && e.Agent == statsbus.AgentBrowser && e.Kind != statsbus.KindImpression {
			visitors[visitorKey{e.JobID, day, e.Kind, e.Channel, e.Visitor}] = struct{}{}
			visitors[visitorKey{e.JobID, day, e.Kind, "", e.Visitor}] = struct{}{}
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin stats: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	_, err = tx.CopyFrom(ctx, pgx.Identifier{"stats_events"}, []string{"job_id", "kind", "channel", "day", "at", "agent", "visitor", "n"},
		pgx.CopyFromSlice(len(events), func(i int) ([]any, error) {
			e := events[i]
			var visitor *int64
			if e.Visitor != 0 {
				visitor = &e.Visitor
			}
			return []any{e.JobID, int16(e.Kind), e.Channel, date(e.At), e.At, int16(e.Agent), visitor, max(e.N, 1)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy stats events: %w", err)
	}

	if len(visitors) > 0 {
		vk := make([]visitorKey, 0, len(visitors))
		for k := range visitors {
			vk = append(vk, k)
		}
		slices.SortFunc(vk, func(a, b visitorKey) int {
			return cmp.Or(cmp.Compare(a.job, b.job), a.day.Compare(b.day), cmp.Compare(a.kind, b.kind),
				cmp.Compare(a.channel, b.channel), cmp.Compare(a.visitor, b.visitor))
		})
		jobs, days, kinds, channels, ids := make([]int64, len(vk)), make([]string, len(vk)), make([]int16, len(vk)),
			make([]string, len(vk)), make([]int64, len(vk))
		for i, k := range vk {
			jobs[i], days[i], kinds[i], channels[i], ids[i] = k.job, k.day.Format(time.DateOnly), int16(k.kind), k.channel, k.visitor
		}
		rows, err := tx.Query(ctx, `INSERT INTO stats_visitors (job_id, day, kind, channel, visitor)
			SELECT * FROM unnest($1::bigint[], $2::date[], $3::smallint[], $4::text[], $5::bigint[])
			ON CONFLICT DO NOTHING RETURNING job_id, day, kind, channel`, jobs, days, kinds, channels, ids)
		if err != nil {
			return fmt.Errorf("insert stats visitors: %w", err)
		}
		for rows.Next() {
			var (
				k    dailyKey
				day  pgtype.Date
				kind int16
			)
			if err := rows.Scan(&k.job, &day, &kind, &k.channel); err != nil {
				rows.Close()
				return fmt.Errorf("scan new visitor: %w", err)
			}
			k.day, k.kind, k.agent = statsbus.Day(day.Time), statsbus.Kind(kind), statsbus.AgentBrowser
			v := daily[k]
			if v == nil {
				v = &[2]int64{}
				daily[k] = v
			}
			v[1]++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("insert stats visitors: %w", err)
		}
	}

	dk := make([]dailyKey, 0, len(daily))
	for k := range daily {
		dk = append(dk, k)
	}
	slices.SortFunc(dk, func(a, b dailyKey) int {
		return cmp.Or(cmp.Compare(a.job, b.job), a.day.Compare(b.day), cmp.Compare(a.channel, b.channel),
			cmp.Compare(a.kind, b.kind), cmp.Compare(a.agent, b.agent))
	})
	jobs, days, channels, kinds, agents, evs, uniq := make([]int64, len(dk)), make([]string, len(dk)), make([]string, len(dk)),
		make([]int16, len(dk)), make([]int16, len(dk)), make([]int64, len(dk)), make([]int64, len(dk))
	for i, k := range dk {
		v := daily[k]
		jobs[i], days[i], channels[i], kinds[i], agents[i], evs[i], uniq[i] = k.job, k.day.Format(time.DateOnly), k.channel,
			int16(k.kind), int16(k.agent), v[0], v[1]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO stats_daily (job_id, day, channel, kind, agent, events, uniques)
		SELECT * FROM unnest($1::bigint[], $2::date[], $3::text[], $4::smallint[], $5::smallint[], $6::bigint[], $7::bigint[])
		ON CONFLICT (job_id, day, channel, kind, agent) DO UPDATE
		SET events = stats_daily.events + EXCLUDED.events, uniques = stats_daily.uniques + EXCLUDED.uniques`,
		jobs, days, channels, kinds, agents, evs, uniq); err != nil {
		return fmt.Errorf("upsert stats daily: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit stats: %w", err)
	}
	return nil
}

// Purge deletes the raw events of days before rawBefore and erases the
// visitor hashes of days before visitorsBefore (raw events keep their
// counts, the visitors table loses its rows).
func (s *Store) Purge(ctx context.Context, rawBefore, visitorsBefore time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM stats_events WHERE day < $1`, date(rawBefore)); err != nil {
		return fmt.Errorf("purge stats events: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE stats_events SET visitor = NULL WHERE day < $1 AND visitor IS NOT NULL`, date(visitorsBefore)); err != nil {
		return fmt.Errorf("erase stats visitors: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM stats_visitors WHERE day < $1`, date(visitorsBefore)); err != nil {
		return fmt.Errorf("purge stats visitors: %w", err)
	}
	return nil
}

// Rows returns a job's roll-up rows of from..to.
func (s *Store) Rows(ctx context.Context, jobID int64, from, to time.Time) ([]statsbus.Row, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_id, day, channel, kind, agent, events, uniques FROM stats_daily
		WHERE job_id = $1 AND day BETWEEN $2 AND $3`, jobID, date(from), date(to))
	if err != nil {
		return nil, fmt.Errorf("query stats: %w", err)
	}
	return pgx.CollectRows(rows, scanRow)
}

// WeekRows implements statsbus.Reader: the sums are PostgreSQL's (on the
// primary key's range, as Rows), so a year by week reads about 53 rows per
// channel, kind and agent instead of 365.
func (s *Store) WeekRows(ctx context.Context, jobID int64, from, to time.Time) ([]statsbus.Row, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_id, date_trunc('week', day)::date AS week, channel, kind, agent,
		sum(events)::bigint, sum(uniques)::bigint FROM stats_daily
		WHERE job_id = $1 AND day BETWEEN $2 AND $3 GROUP BY job_id, week, channel, kind, agent`, jobID, date(from), date(to))
	if err != nil {
		return nil, fmt.Errorf("query weekly stats: %w", err)
	}
	return pgx.CollectRows(rows, scanRow)
}

// SpaceRows returns the roll-up rows of from..to of a space's jobs.
func (s *Store) SpaceRows(ctx context.Context, spaceID int64, from, to time.Time) ([]statsbus.Row, error) {
	rows, err := s.pool.Query(ctx, `SELECT d.job_id, d.day, d.channel, d.kind, d.agent, d.events, d.uniques
		FROM stats_daily d JOIN jobs j ON j.id = d.job_id
		WHERE j.space_id = $1 AND d.day BETWEEN $2 AND $3`, spaceID, date(from), date(to))
	if err != nil {
		return nil, fmt.Errorf("query space stats: %w", err)
	}
	return pgx.CollectRows(rows, scanRow)
}

func scanRow(r pgx.CollectableRow) (statsbus.Row, error) {
	var (
		row         statsbus.Row
		day         pgtype.Date
		kind, agent int16
	)
	err := r.Scan(&row.JobID, &day, &row.Channel, &kind, &agent, &row.Events, &row.Uniques)
	row.Day, row.Kind, row.Agent = statsbus.Day(day.Time), statsbus.Kind(kind), statsbus.Agent(agent)
	return row, err
}

// OwnerRows sums the roll-ups of from..to per job, channel, kind and agent
// for a space's jobs, or (spaceID 0) the jobs keyID posted without a space.
func (s *Store) OwnerRows(ctx context.Context, spaceID, keyID int64, from, to time.Time) ([]statsbus.Row, map[int64]string, error) {
	owner := `j.space_id = $1`
	arg := spaceID
	if spaceID == 0 {
		owner, arg = `j.space_id = 0 AND j.key_id = $1`, keyID
	}
	rows, err := s.pool.Query(ctx, `SELECT d.job_id, j.title, d.channel, d.kind, d.agent, sum(d.events)::bigint, sum(d.uniques)::bigint
		FROM stats_daily d JOIN jobs j ON j.id = d.job_id
		WHERE `+owner+` AND d.day BETWEEN $2 AND $3
		GROUP BY d.job_id, j.title, d.channel, d.kind, d.agent`, arg, date(from), date(to))
	if err != nil {
		return nil, nil, fmt.Errorf("query owner stats: %w", err)
	}
	defer rows.Close()
	var out []statsbus.Row
	titles := map[int64]string{}
	for rows.Next() {
		var (
			row         statsbus.Row
			title       string
			kind, agent int16
		)
		if err := rows.Scan(&row.JobID, &title, &row.Channel, &kind, &agent, &row.Events, &row.Uniques); err != nil {
			return nil, nil, fmt.Errorf("scan owner stats: %w", err)
		}
		row.Kind, row.Agent = statsbus.Kind(kind), statsbus.Agent(agent)
		titles[row.JobID] = title
		out = append(out, row)
	}
	return out, titles, rows.Err()
}
