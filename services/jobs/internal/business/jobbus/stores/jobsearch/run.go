package jobsearch

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// rows reads listColumns, and distance_km when the listing is near a point.
type rows struct {
	pgx.Rows
	near bool
}

func (r rows) Scan(j *jobbus.Job) error {
	dst := []any{&j.ID, &j.Title, &j.Company, &j.JobType, &j.Tags, &j.IsRemote, &j.Slug, &j.ExternalURL,
		&j.ApplyURL, &j.CompanyLogo, &j.DateAdded, &j.ExpirationDate, &j.CityName, &j.CitySlug, &j.SpaceName,
		&j.SalMin, &j.SalMax, &j.Currency, &j.SalaryPeriod, &j.WorkplaceType, &j.ExternalRef}
	if r.near {
		dst = append(dst, &j.DistanceKm)
	}
	return r.Rows.Scan(dst...)
}

// list runs a listing's statement; its first row is read here, with the
// server's error if there is one, so that a read routed to a replica can
// still go to the primary when the replica fails.
func list(ctx context.Context, db DB, f listing) (jobbus.JobRows, error) {
	q, args := listSQL(f)
	qr, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	p := &peeked{Rows: qr, first: qr.Next()}
	if !p.first && qr.Err() != nil {
		qr.Close()
		return nil, fmt.Errorf("list jobs: %w", qr.Err())
	}
	return rows{p, f.Near != nil}, nil
}

// peeked is rows whose first row List has read already.
type peeked struct {
	pgx.Rows
	first, read bool
}

func (p *peeked) Next() bool {
	if !p.read {
		p.read = true
		return p.first
	}
	return p.Rows.Next()
}

// countSQL is the SQL of a listing's total.
func countSQL(f listing) (string, []any) {
	with, from, w := where(f, false)
	return with + `SELECT count(*)` + from, w.Args()
}

func page(ctx context.Context, db DB, f listing) ([]jobbus.Job, int, error) {
	if walks(f, math.MaxInt) && f.plan == nil {
		// Counted with its plan and best rank, as a kept total is: the walk
		// then looks for the rank matches have (make bench row b7).
		t, err := count(ctx, db, f)
		if err != nil {
			return nil, 0, err
		}
		f.plan = t.Plan
		jobs, err := pageOf(ctx, db, f, t.N)
		return jobs, t.N, err
	}
	cq, cargs := countSQL(f)
	var total int
	if walks(f, math.MaxInt) || walksPoints(f, math.MaxInt) {
		// A page that may be walked: the count says whether it is worth it.
		if err := db.QueryRow(ctx, cq, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count jobs: %w", err)
		}
		jobs, err := pageOf(ctx, db, f, total)
		return jobs, total, err
	}
	// One round trip: the count and the page in a batch.
	q, args := listSQL(f)
	batch := &pgx.Batch{}
	batch.Queue(cq, cargs...)
	batch.Queue(q, args...)
	br := db.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count jobs: %w", err)
	}
	r, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("page jobs: %w", err)
	}
	jobs, err := scanPage(r, f)
	return jobs, total, err
}

func pageOf(ctx context.Context, db DB, f listing, total int) ([]jobbus.Job, error) {
	q, args := listSQL(f)
	switch {
	case walks(f, total):
		q, args = walkSQL(f)
	case walksPoints(f, total):
		q, args = pointsSQL(f)
	}
	r, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("page jobs: %w", err)
	}
	return scanPage(r, f)
}

func scanPage(r pgx.Rows, f listing) ([]jobbus.Job, error) {
	defer r.Close()
	jobs := make([]jobbus.Job, 0, f.Limit)
	for r.Next() {
		var j jobbus.Job
		if err := (rows{r, f.Near != nil}).Scan(&j); err != nil {
			return nil, fmt.Errorf("scan job: %w", err)
		}
		jobs = append(jobs, j)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("page jobs: %w", err)
	}
	return jobs, nil
}

// count counts on the primary (a replica may not have replayed every
// write before the versions a kept total is named by).
func count(ctx context.Context, db DB, f listing) (Total, error) {
	planned := !f.Search.Empty() && f.plan == nil
	// With the plan, the best rank any match has (TopScore): every match is
	// read for the count already, and a page whose best rank is not the best
	// possible would otherwise rank every match (make bench row b7).
	scored := planned && len(f.Search.Words) > 0
	with, from, w := where(f, scored)
	var t Total
	var until *time.Time
	var top *int32
	var best *bool
	columns, dest := `count(*), now(), min(expiration_date)`, []any{&t.N, &t.At, &until}
	if planned {
		t.Plan = &Plan{}
		columns, dest = columns+`, `+planColumns, append(dest, planDest(t.Plan)...)
	} else {
		t.Plan = f.plan
	}
	if scored {
		columns, dest = columns+`, max(`+rank(len(f.Search.Words), true)+`), bool_or(`+topLevel+`)`, append(dest, &top, &best)
	}
	if err := db.QueryRow(ctx, with+`SELECT `+columns+from, w.Args()...).Scan(dest...); err != nil {
		return t, fmt.Errorf("count jobs: %w", err)
	}
	if until != nil {
		t.Until = *until
	}
	// When a match has the best possible rank, the walk keeps to
	// topLevel's two tests a row instead of the rank's (TopScore 0; make
	// bench row b1).
	if top != nil && (best == nil || !*best) {
		t.Plan.TopScore = int(*top)
	}
	return t, nil
}

// Latest are the newest active jobs of f (its filters and search, newest
// first, f.Limit of them) with their descriptions, and when the jobs last
// changed (Changed), read in the same round trip: the feeds.
func Latest(ctx context.Context, db DB, f jobbus.ListFilter) ([]jobbus.Job, time.Time, error) {
	with, from, w := where(planned(f, nil), false)
	q := with + `SELECT ` + listColumns + `, description, updated_at` + from + ` ORDER BY date_added DESC, id DESC LIMIT ` + w.Arg(f.Limit)
	batch := &pgx.Batch{}
	batch.Queue(q, w.Args()...)
	batch.Queue(changedSQL)
	br := db.SendBatch(ctx, batch)
	defer br.Close()
	r, err := br.Query()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("feed jobs: %w", err)
	}
	jobs := make([]jobbus.Job, 0, f.Limit)
	for r.Next() {
		var j jobbus.Job
		if err := r.Scan(&j.ID, &j.Title, &j.Company, &j.JobType, &j.Tags, &j.IsRemote, &j.Slug, &j.ExternalURL,
			&j.ApplyURL, &j.CompanyLogo, &j.DateAdded, &j.ExpirationDate, &j.CityName, &j.CitySlug, &j.SpaceName,
			&j.SalMin, &j.SalMax, &j.Currency, &j.SalaryPeriod, &j.WorkplaceType, &j.ExternalRef, &j.Description, &j.UpdatedAt); err != nil {
			r.Close()
			return nil, time.Time{}, fmt.Errorf("scan feed job: %w", err)
		}
		jobs = append(jobs, j)
	}
	r.Close()
	if err := r.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("feed jobs: %w", err)
	}
	var changed time.Time
	if err := br.QueryRow().Scan(&changed); err != nil {
		return nil, time.Time{}, fmt.Errorf("jobs changed: %w", err)
	}
	return jobs, changed, nil
}

// changedSQL is when the public set of jobs last changed: the latest write
// to any job (every write sets updated_at), or the latest expiry already
// past that the sweep has not yet written (such a job left the listings
// when its date passed). Both are one index probe (jobs_updated_at_idx,
// jobs_active_expiry_idx). Never later than now, so that Last-Modified is a
// valid date.
const changedSQL = `SELECT least(now(), greatest(
	coalesce((SELECT max(updated_at) FROM jobs), 'epoch'),
	coalesce((SELECT max(expiration_date) FROM jobs WHERE status = 'active' AND expiration_date <= now()), 'epoch')))`

// Changed is when the public set of jobs last changed (changedSQL).
func Changed(ctx context.Context, db DB) (time.Time, error) {
	var t time.Time
	if err := db.QueryRow(ctx, changedSQL).Scan(&t); err != nil {
		return t, fmt.Errorf("jobs changed: %w", err)
	}
	return t, nil
}
