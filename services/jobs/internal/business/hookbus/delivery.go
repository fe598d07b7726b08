package hookbus

import (
	"context"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// DeliveryStorer is the storage the delivery of job events to the
// endpoints needs (workflows/webhook; hookdb implements it, the worker's
// main hands it over).
type DeliveryStorer interface {
	// TakeDue returns the endpoint and up to limit due deliveries (one per
	// job, none of busy's) for the holder of l; ErrNotFound when the
	// endpoint is gone, eventbus.ErrFenced when another pump claimed it.
	TakeDue(ctx context.Context, endpointID int64, l eventbus.Lease, busy []int64, limit int) (Due, error)
	// PendingJobs are those of jobs with a pending delivery to the endpoint.
	PendingJobs(ctx context.Context, endpointID int64, jobs []int64) (map[int64]bool, error)
	// Advance moves the endpoint's position under l, with the rows of what
	// was not simply delivered, in one statement (eventbus.ErrFenced).
	Advance(ctx context.Context, endpointID int64, l eventbus.Lease, to jobbus.Cursor, qs []Queued) error
	// RecordAll keeps the outcomes of attempts on their delivery rows.
	RecordAll(ctx context.Context, as []Attempt) error
	// SkipPending marks every pending delivery of a disabled endpoint skipped.
	SkipPending(ctx context.Context, endpointID int64, why string) error
	// ReleasePump ends a pump's lease once the wake-ups that saw it committed.
	ReleasePump(ctx context.Context, l eventbus.Lease) error
	// Work is whether the endpoint has something to send now, and when its
	// next pending delivery is due.
	Work(ctx context.Context, endpointID int64) (due bool, next *time.Time, err error)
	// Succeeded clears the endpoint's failing streak; Failed starts or
	// continues it and reports since when (unix seconds).
	Succeeded(ctx context.Context, endpointID int64) error
	Failed(ctx context.Context, endpointID int64) (since int64, err error)
	// Disable turns the endpoint off with reason (and queues its owner's
	// mail); false when it was off already.
	Disable(ctx context.Context, endpointID int64, reason string) (bool, error)
	// Dispatch runs a round of the wake-ups; WakeStranded wakes endpoints
	// with work and no pump.
	Dispatch(ctx context.Context, limit int) (events, woken int, err error)
	WakeStranded(ctx context.Context) (int, error)
	// OutboxTable holds the wake-ups, MailOutbox the mails about disabled
	// endpoints (for outbox.Relay).
	OutboxTable() outbox.Table[OutboxItem]
	MailOutbox() outbox.Table[DisabledMail]
}

// Due is what a pump round takes: the endpoint with its secrets and the
// oldest pending delivery of each of its jobs that is due.
type Due struct {
	Endpoint   Endpoint
	Secret     string
	OldSecret  string // "" when none signs beside Secret
	Deliveries []Delivery
	// Pending: the endpoint has pending deliveries, due or not.
	Pending bool
}

// Queued is an event that becomes a delivery row: its first attempt's
// outcome, or none (it waits behind an earlier delivery of its job).
type Queued struct {
	Event   jobbus.JobEvent
	Attempt *Attempt // DeliveryID unused
}

// Attempt is the outcome of one attempt as the log keeps it.
type Attempt struct {
	DeliveryID     int64
	Status         string // pending (will retry), succeeded, failed, skipped
	ResponseStatus *int
	ResponseBody   *string
	LatencyMS      *int
	Error          *string
	NextTryAt      *int64 // unix seconds; nil: no retry
}

// OutboxItem wakes an endpoint's workflow (DeliveryID and JobID 0; rows of
// the earlier designs name them, and wake the endpoint all the same).
type OutboxItem struct {
	DeliveryID, EndpointID, JobID int64
}

// DisabledMail is a queued mail about a disabled endpoint.
type DisabledMail struct {
	EndpointID         int64
	Email, URL, Reason string
}
