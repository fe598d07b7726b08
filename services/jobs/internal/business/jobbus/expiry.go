package jobbus

import (
	"context"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
)

// ExpiryStorer is the storage the expiry's activities need
// (workflows/jobexpiry; jobdb implements it, the worker's main hands it
// over).
type ExpiryStorer interface {
	// ExpireIfDue expires a job whose expiration date has passed when the
	// lifecycle lets the expiry move its state (ExpiryMoves); when it is
	// not due yet it reports its current expiration date (it may have
	// moved). found is false for no job.
	ExpireIfDue(ctx context.Context, jobID int64) (expired bool, status string, expiresAt time.Time, found bool, err error)
	// ExpireOverdue expires up to limit jobs past their expiration date
	// (the sweep) and reports how many it expired.
	ExpireOverdue(ctx context.Context, limit int) (int, error)
}

// OutboxStorer is the storage the expiry's relay needs
// (workflows/jobexpiry): the intents written with each job, and the purges
// of what outlived its window.
type OutboxStorer interface {
	// OutboxTable holds the intents (for outbox.Relay); a job's keep their
	// order.
	OutboxTable() outbox.Table[OutboxItem]
	// PurgeIdempotencyKeys deletes up to limit idempotency records created
	// before cutoff.
	PurgeIdempotencyKeys(ctx context.Context, cutoff time.Time, limit int) (int64, error)
	// PurgeEvents deletes up to limit job events that occurred before
	// cutoff.
	PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int64, error)
}

// Kinds of intent of the outbox, written in the job's own statement: an
// expiry intent moves the job's timer, a creation mail starts the poster's
// mail.
const (
	KindExpiry      = "expiry"
	KindCreatedMail = "created_mail"
)

// OutboxItem is one intent of the outbox.
type OutboxItem struct {
	JobID     int64
	Kind      string
	ExpiresAt time.Time
}
