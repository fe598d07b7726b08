package indexbus

import (
	"context"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// NoticeStorer is the storage the index notifier needs
// (workflows/indexing; indexdb implements it, the worker's main hands it
// over).
type NoticeStorer interface {
	// Notices queues the notices of a batch of job events (the reader
	// "indexing"'s handler) and reports how many.
	Notices(ctx context.Context, baseURL string, evs []jobbus.JobEvent) (int, error)
	// Send runs one send round at now within the day's quota: up to max
	// due notices, a job's in version order, sent by send, their outcomes
	// recorded, a retry due after backoff(attempts).
	Send(ctx context.Context, now time.Time, dailyQuota, max int, backoff func(int) time.Duration, send SendFunc) (Round, error)
}

// Round is what one send round did.
type Round struct {
	Sent, Retried, Failed int
	// Waiting counts the notices due now that the day's quota holds back
	// (0 when the round had room for all of them).
	Waiting int
}

// SendFunc sends one batch and answers one outcome per notice, in order.
type SendFunc func(context.Context, []Notice) []Outcome
