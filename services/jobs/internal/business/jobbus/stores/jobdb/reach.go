package jobdb

import (
	"context"
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
)

// Active implements jobbus.ListStorer: a keyset batch over jobs_active_id_idx,
// so a walk of every active job holds one batch at a time.
func (s *Store) Active(ctx context.Context, a jobbus.ActiveWalk) ([]jobbus.Detail, error) {
	w := &pg.Where{}
	q := `SELECT ` + detailColumns + ` WHERE j.status = 'active' AND j.expiration_date > now() AND j.id > ` + w.Arg(a.AfterID)
	if a.UpTo > 0 {
		q += ` AND j.id <= ` + w.Arg(a.UpTo)
	}
	if len(a.Plans) > 0 {
		q += ` AND j.plan_id = ANY(` + w.Arg(a.Plans) + `::integer[])`
	}
	if a.SpaceID != 0 {
		q += ` AND j.space_id = ` + w.Arg(a.SpaceID)
	}
	q += ` ORDER BY j.id LIMIT ` + w.Arg(a.Limit)
	rows, err := s.db.Query(ctx, q, w.Args()...)
	if err != nil {
		return nil, fmt.Errorf("active jobs: %w", err)
	}
	defer rows.Close()
	out := make([]jobbus.Detail, 0, a.Limit)
	for rows.Next() {
		d, err := scanDetail(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("active jobs: %w", err)
	}
	return out, nil
}

// SitemapParts implements jobbus.ListStorer.
func (s *Store) SitemapParts(ctx context.Context, size int64) ([]jobbus.SitemapPart, error) {
	rows, err := s.db.Query(ctx, `SELECT (id - 1) / $1 + 1 AS part, max(updated_at) FROM jobs
		WHERE status = 'active' AND expiration_date > now() GROUP BY 1 ORDER BY 1`, size)
	if err != nil {
		return nil, fmt.Errorf("sitemap parts: %w", err)
	}
	defer rows.Close()
	var parts []jobbus.SitemapPart
	for rows.Next() {
		var p jobbus.SitemapPart
		if err := rows.Scan(&p.N, &p.Modified); err != nil {
			return nil, fmt.Errorf("sitemap parts: %w", err)
		}
		parts = append(parts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sitemap parts: %w", err)
	}
	return parts, nil
}

// Changed implements jobbus.ListStorer.
func (s *Store) Changed(ctx context.Context) (time.Time, error) { return jobsearch.Changed(ctx, s.db) }
