package jobbus

import (
	"context"
	"time"
)

// Event types: what receivers hear about a job (webhooks, the changes feed).
// Each is written by the statement that makes the change.
const (
	TypeCreated     = "job.created"
	TypeUpdated     = "job.updated"
	TypePublished   = "job.published"
	TypePaused      = "job.paused"
	TypeResumed     = "job.resumed"
	TypeUnpublished = "job.unpublished"
	TypeExpired     = "job.expired"
	TypeRelisted    = "job.relisted"
	TypeClosed      = "job.closed"
	TypePaid        = "job.paid"
)

// EventTypes are every event type, in the order of a job's life.
var EventTypes = []string{TypeCreated, TypeUpdated, TypePublished, TypePaused, TypeResumed, TypeUnpublished,
	TypeExpired, TypeRelisted, TypeClosed, TypePaid}

// actionTypes name the event of each action that moves a job.
var actionTypes = map[string]string{
	ActionPublished:   TypePublished,
	ActionPaused:      TypePaused,
	ActionResumed:     TypeResumed,
	ActionRelisted:    TypeRelisted,
	ActionClosed:      TypeClosed,
	ActionUnpublished: TypeUnpublished,
	ActionExpired:     TypeExpired,
}

// Events are the event types the change writes, in order: a payment first
// (job.paid), then what it did to the job's state. A change that writes
// nothing has none.
func (c Change) Events() []string {
	if !c.Writes() {
		return nil
	}
	var evs []string
	if c.Payment != nil || c.MarkPaid() {
		evs = append(evs, TypePaid)
	}
	if t, ok := actionTypes[c.Action]; ok && (c.To != c.From || c.NewPeriod() || c.RestartClock()) {
		evs = append(evs, t)
	}
	return evs
}

// JobEvent is one change of a job as the outbox keeps it.
type JobEvent struct {
	ID         string // unique (a UUID)
	JobID      int64
	Type       string
	Version    int64
	Status     string
	PrevStatus string
	SpaceID    int64
	KeyID      int64
	OccurredAt time.Time
	// Cursor is the event's position in the feed.
	Cursor Cursor
}

// Cursor is a position in the committed order of the events: the writing
// transaction's id, then the event's sequence within the table.
type Cursor struct {
	XID uint64
	Seq int64
	// At is when the event at the position occurred: a cursor older than
	// the retention is gone.
	At time.Time
}

// Audience is who may hear of a job's events without reading the job: a
// space key its space's; a key without a space the jobs it created and
// every job that was publicly listed before or after the change. It is the
// rule of Get, applied to the event's facts.
type Audience struct {
	SpaceID int64
	KeyID   int64
}

// AudienceOf is the audience of caller.
func AudienceOf(caller Caller) Audience {
	return Audience{SpaceID: caller.SpaceID, KeyID: caller.KeyID}
}

// Hears reports whether a hears of e (the stores apply the same rule in SQL).
func (a Audience) Hears(e JobEvent) bool {
	if a.SpaceID != 0 {
		return e.SpaceID == a.SpaceID
	}
	return e.KeyID == a.KeyID || e.Status == StatusActive || e.PrevStatus == StatusActive
}

// EventStorer reads the events (the changes feed and the webhook dispatch).
type EventStorer interface {
	// EventsAfter returns up to limit events heard by a, committed after
	// cursor after (zero: from the start) and, when since is set, occurred
	// no earlier than since, with their jobs as they are now (those that
	// exist, each once), read together; next is the position after the
	// last event examined (after itself when there were none).
	EventsAfter(ctx context.Context, a *Audience, after Cursor, since time.Time, limit int) (evs []JobEvent, jobs []Detail, next Cursor, err error)
}
