package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// statement is one SQL statement with its arguments, as pgx sent it.
type statement struct {
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
}

// recorder is a pgx tracer that keeps every statement a connection sends.
type recorder struct{ sent []statement }

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.sent = append(r.sent, statement{d.SQL, d.Args})
	return ctx
}

func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	for _, q := range d.Batch.QueuedQueries {
		r.sent = append(r.sent, statement{q.SQL, q.Arguments})
	}
	return ctx
}

func (*recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData)     {}
func (*recorder) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (*recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// listSQL prints the statements GET /v2/jobs sends for the given filters:
// "count" and "page" when -limit is set (Page's batch), else "list" (the
// streamed unpaginated list). It runs the listing once through the store at
// DATABASE_URL and records what pgx sends, so the benchmark harness runs
// under pgbench exactly the service's SQL.
func listSQL(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("list-sql", flag.ContinueOnError)
	var f jobbus.ListFilter
	fs.StringVar(&f.CitySlug, "city", "", "city slug")
	fs.StringVar(&f.JobType, "job-type", "", "job type")
	text := fs.String("q", "", "search text, as GET /v2/jobs takes it")
	fs.StringVar(&f.Sort, "sort", "", "relevance, newest or distance (default: distance with near, relevance with q, else newest)")
	near := fs.String("near", "", "LAT,LON (with -radius)")
	radius := fs.String("radius", "", "radius_km")
	salaryMin := fs.Int64("salary-min", -1, "salary_min (with -currency)")
	fs.StringVar(&f.Currency, "currency", "", "currency")
	fs.StringVar(&f.Tag, "tag", "", "one tag")
	fs.BoolVar(&f.Remote, "remote", false, "remote jobs only")
	fs.Int64Var(&f.SpaceID, "space", 0, "space id of a space-scoped key")
	fs.IntVar(&f.Limit, "limit", 0, "page size (0: the unpaginated list)")
	fs.IntVar(&f.Offset, "offset", 0, "page offset")
	kept := fs.Bool("kept", false, "the page alone, as the service reads it with its total and search plan kept (JOBS_TOTALS_MEMO): counted first, then recorded")
	explain := fs.Bool("explain", false, "print each statement's EXPLAIN (ANALYZE, BUFFERS) instead of the JSON (docs/search.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f.Search, _ = jobbus.ParseSearch(*text)
	if n, ok, problems := geo.Parse(*near, *radius); ok {
		f.Near = &n
	} else if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	if *salaryMin >= 0 {
		f.SalaryMin = salaryMin
	}
	if f.Sort == "" {
		f.Sort = f.DefaultSort()
	}

	var cfg config.Common
	if err := config.Parse(&cfg, nil); err != nil {
		return err
	}
	rec := &recorder{}
	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: 1, Tracer: rec, Params: jobdb.PoolParams})
	if err != nil {
		return err
	}
	defer pool.Close()
	names := []string{"list"}
	switch {
	case *kept && f.Limit > 0:
		var t jobsearch.Total
		if t, err = jobsearch.Count(ctx, pool, f); err == nil {
			rec.sent, names = nil, []string{"page"}
			_, err = jobsearch.PageOf(ctx, pool, f, t.N, t.Plan)
		}
	case f.Limit > 0:
		names = []string{"count", "page"}
		_, _, err = jobsearch.Page(ctx, pool, f)
	default:
		var rows jobbus.JobRows
		if rows, err = jobsearch.List(ctx, pool, f); err == nil {
			rows.Close()
			err = rows.Err()
		}
	}
	if err != nil {
		return err
	}
	if len(rec.sent) != len(names) {
		return fmt.Errorf("the listing sent %d statements, want %d", len(rec.sent), len(names))
	}
	out := map[string]statement{}
	for i, name := range names {
		out[name] = rec.sent[i]
	}
	if *explain {
		return explainAll(ctx, w, pool, names, out)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// explainAll prints the plan of each statement as the server ran it again
// (with the work_mem the jobs API's connections start with).
func explainAll(ctx context.Context, w io.Writer, pool *pgxpool.Pool, names []string, sts map[string]statement) error {
	for _, name := range names {
		st := sts[name]
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+st.SQL, st.Args...)
		if err != nil {
			return fmt.Errorf("explain %s: %w", name, err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("explain %s: %w", name, err)
		}
		fmt.Fprintf(w, "-- %s\n%s\n\n", name, strings.Join(plan, "\n"))
	}
	return nil
}
