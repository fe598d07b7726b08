package alertbus

import (
	"context"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// MailStorer is the storage the alert matcher and its mails need
// (workflows/alertmail; alertdb implements it, the worker's main hands it
// over).
type MailStorer interface {
	// Match is the matcher's eventbus handler: the jobs that became visible
	// in evs compared with the confirmed alerts of their keys (searches read
	// back by parse), each (alert, job) recorded once with an instant mail
	// queued; it reports the matches.
	Match(ctx context.Context, evs []jobbus.JobEvent, parse Parse) (matches int, err error)
	// PurgeUnconfirmed deletes the alerts unconfirmed after UnconfirmedTTL
	// and the addresses no alert holds.
	PurgeUnconfirmed(ctx context.Context) (int, error)
	Get(ctx context.Context, id int64) (Alert, error)
	// Pending lists the unconfirmed alerts of the address of alert id.
	Pending(ctx context.Context, id int64, limit int) ([]Alert, error)
	// TakeDigests runs the digest clock's tick at (the workflow's time) and
	// reports the alerts taken and the digest mails queued.
	TakeDigests(ctx context.Context, at time.Time, limit int) (alerts, digests int, err error)
	// DigestJobs are the jobs of the digest of alert marked at, still
	// visible now, newest match first, at most limit.
	DigestJobs(ctx context.Context, alertID int64, at time.Time, limit int) ([]int64, error)
	// OutboxTable holds the mails to send (for outbox.Relay).
	OutboxTable() outbox.Table[OutboxItem]
}

// Parse turns a stored search back into its filter (jobbus.ParseQuery,
// the listing's own validation); false for one no longer valid.
type Parse func(search string) (jobbus.ListFilter, bool)

// OutboxItem is one mail to send.
type OutboxItem struct {
	AlertID  int64
	Kind     string
	JobID    int64
	DigestAt time.Time // a digest's: its pairs' sent_at
}
