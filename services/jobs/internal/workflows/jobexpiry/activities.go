package jobexpiry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// Activities hold the dependencies of the expiry activities.
type Activities struct {
	Store jobbus.ExpiryStorer
	// Metrics counts expired jobs (nil: not counted).
	Metrics *metrics.Counts
	// Mail sends the poster's mails (nil: a worker that sends none).
	Mail *jobmail.Activities
	// Changes are bumped after jobs expired (nil: none). The activity fails
	// when they cannot be, and Temporal retries it: the retry finds nothing
	// left to expire but bumps again.
	Changes *changes.Versions
}

// NewMetrics registers jobs_expired_total{trigger} on reg, for Activities.Metrics.
func NewMetrics(reg prometheus.Registerer) *metrics.Counts {
	return metrics.NewCounts(reg, "jobs_expired_total",
		"Jobs expired by the expiry worker, by trigger (timer: the job's own workflow; sweep: the periodic sweep).",
		"trigger", "timer", "sweep")
}

// ExpireJob expires the job when it is active and due; otherwise it reports
// why not (already expired, not found, or a later date to wait for).
func (a *Activities) ExpireJob(ctx context.Context, jobID int64) (ExpireResult, error) {
	expired, status, expiresAt, found, err := a.Store.ExpireIfDue(ctx, jobID)
	if err != nil {
		return ExpireResult{}, err
	}
	if expired {
		a.Metrics.Add("timer", 1)
	}
	if expired || status == jobbus.StatusExpired {
		// The space is not known here: every space's view moves.
		if err := a.Changes.Bump(ctx, scopes.Jobs, scopes.JobsBulk); err != nil {
			return ExpireResult{}, err
		}
	}
	res := ExpireResult{Expired: expired, Status: status}
	if found && !expired && status == jobbus.StatusActive {
		res.NotDueUntil = &expiresAt
	}
	return res, nil
}

// SweepOverdue expires every overdue active job in batches and reports how many.
func (a *Activities) SweepOverdue(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := a.Store.ExpireOverdue(ctx, sweepBatch)
		total += n
		a.Metrics.Add("sweep", n)
		if err != nil {
			return total, err
		}
		if n < sweepBatch {
			// Whether or not this sweep expired anything: it may be the retry
			// of one that expired jobs and then failed to bump (hourly, so
			// the caches lose little).
			return total, a.Changes.Bump(ctx, scopes.Jobs, scopes.JobsBulk)
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}
