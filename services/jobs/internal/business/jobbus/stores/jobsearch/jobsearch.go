// Package jobsearch turns a listing of jobs (its filters, q, sort and page)
// into SQL and runs it: the filters, the text-search queries, the rank, and
// the strategies that find a page without ranking every match (the walk
// among the newest jobs, the walk point by point for a distance order).
// docs/search.md explains the search; the PL/pgSQL it calls is
// migrations/functions.sql.
//
// A search's Plan (its queries, computed by PostgreSQL) is this package's
// artefact: the cache that keeps a listing's total may keep the plan with it
// and hand it back, and nothing else reads it.
package jobsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// DB is what a pool and a transaction have in common.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Plan is a search as its text-search queries, in their text form
// (search_plan's row; empty: none). It depends only on the search and on the
// words jobs have, so it can be kept with a listing's total and read back
// instead of being computed again (BenchmarkWalkSQLKept, make bench rows b1-b8).
type Plan struct {
	Match    string   `json:"m"`
	Exact    []string `json:"e"`
	Stem     []string `json:"s"`
	AnyQ     []string `json:"a"`
	Phrase   []string `json:"p"`
	TopExact string   `json:"x"`
	TopForm  string   `json:"f"`
	Walk     bool     `json:"w"`
	// TopScore is the best rank any match had when the plan was counted,
	// when it is not the best any row can have (0: it is, or not known):
	// the page's walk looks for the newest matches of that rank (walkSQL),
	// else for the best possible.
	TopScore int `json:"r,omitempty"`
}

// Encode is the plan as kept beside a total.
func (p *Plan) Encode() (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode search plan: %w", err)
	}
	return string(b), nil
}

// DecodePlan is a plan kept by Encode; nil (computed again) for none or one
// that does not decode.
func DecodePlan(s string) *Plan {
	if s == "" {
		return nil
	}
	var p Plan
	if json.Unmarshal([]byte(s), &p) != nil {
		return nil
	}
	return &p
}

// Total is a listing's exact total as counted: when (the database's now()),
// when the first counted job expires (zero: none counted), and the search's
// plan it was counted with (nil: no search).
type Total struct {
	N         int
	At, Until time.Time
	Plan      *Plan
}

// listing is a filter with the plan of its search, when one is known.
type listing struct {
	jobbus.ListFilter
	plan *Plan
}

// planned is f with plan, which a search without a plan computes in its
// statement; the plan of a filter without a search is dropped.
func planned(f jobbus.ListFilter, plan *Plan) listing {
	if f.Search.Empty() {
		plan = nil
	}
	return listing{ListFilter: f, plan: plan}
}

// List streams the matching active jobs.
func List(ctx context.Context, db DB, f jobbus.ListFilter) (jobbus.JobRows, error) {
	return list(ctx, db, planned(f, nil))
}

// Page is one page of the matching active jobs and their total.
func Page(ctx context.Context, db DB, f jobbus.ListFilter) ([]jobbus.Job, int, error) {
	return page(ctx, db, planned(f, nil))
}

// PageOf is the page of a listing whose total is known, with the plan the
// total was counted with (nil: computed here).
func PageOf(ctx context.Context, db DB, f jobbus.ListFilter, total int, plan *Plan) ([]jobbus.Job, error) {
	return pageOf(ctx, db, planned(f, plan), total)
}

// Count is a listing's total with when it was counted, when its first job
// expires, and its search's plan.
func Count(ctx context.Context, db DB, f jobbus.ListFilter) (Total, error) {
	return count(ctx, db, planned(f, nil))
}

// Expired counts the jobs of a total counted at since that have expired by
// now (jobs_active_expiry_idx finds them).
func Expired(ctx context.Context, db DB, f jobbus.ListFilter, since time.Time, plan *Plan) (int, error) {
	w := &pg.Where{}
	with, conds := listConds(w, planned(f, plan), false)
	conds[1] = `expiration_date > ` + w.Arg(since) + ` AND expiration_date <= now()`
	var n int
	if err := db.QueryRow(ctx, with+`SELECT count(*)`+fromWhere(with, conds), w.Args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count expired jobs: %w", err)
	}
	return n, nil
}
