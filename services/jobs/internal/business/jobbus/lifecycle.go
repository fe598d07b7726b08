package jobbus

import (
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// Event is something that may change a job's status.
type Event string

// Events of a job's life (docs/job-lifecycle.md).
const (
	EventCreate    Event = "create" // POST /v2/jobs, no fingerprint match
	EventUpdate    Event = "update" // POST /v2/jobs, fingerprint match
	EventPublish   Event = "publish"
	EventPause     Event = "pause"
	EventResume    Event = "resume"
	EventRelist    Event = "relist"
	EventClose     Event = "close"
	EventUnpublish Event = "unpublish"
	EventExpire    Event = "expire" // the expiry timer or the sweep
	EventPaid      Event = "paid"   // a payment was recorded
)

// RouteEvents are the events a client sends with POST /v2/jobs/{event}.
var RouteEvents = []Event{EventPublish, EventPause, EventResume, EventRelist, EventClose, EventUnpublish}

// stateNone is the state of a job that does not exist yet.
const stateNone = ""

// effect is what a transition does besides setting the status.
type effect uint8

const (
	// newPeriod starts a listing period: date_added becomes now and
	// expiration_date now + the plan's days.
	newPeriod effect = 1 << iota
	// stopClock records when the job was paused.
	stopClock
	// restartClock moves expiration_date by the time spent paused.
	restartClock
	// markPaid sets is_paid.
	markPaid
	// refreshPlan lets a fingerprint update change plan and expiration.
	refreshPlan
)

// facts are what a transition's condition may look at.
type facts struct {
	job Detail
	// qualified: the caller's new jobs start active (a confirmed Pro space's
	// key or a trusted importer).
	qualified bool
	now       time.Time
}

func (f facts) planFree() bool   { return f.job.Plan.Price == 0 }
func (f facts) paidOrFree() bool { return f.planFree() || f.job.IsPaid }
func (f facts) due() bool        { return !f.job.ExpirationDate.After(f.now) }

// transition is one line of the table: in state from, event moves the job to
// to when cond holds (nil: always). The first matching line wins. A line
// with refuse set is a 409 with that reason; payFirst adds the payment link.
type transition struct {
	from     string
	event    Event
	cond     func(facts) bool
	to       string
	action   string
	effects  effect
	refuse   string
	payFirst bool
}

// table is the whole life of a job. Lines absent for a (state, event) pair
// are refused with the generic reason of refusal.
var table = []transition{
	// The spec's States and transitions: the initial status.
	{from: stateNone, event: EventCreate, cond: facts.isQualified, to: StatusActive, action: ActionCreated},
	{from: stateNone, event: EventCreate, to: StatusDraft, action: ActionCreated},

	// A fingerprint match updates the content; an update never revives an
	// expired, paused or closed job; a draft may now qualify.
	{from: StatusDraft, event: EventUpdate, cond: facts.isQualified, to: StatusActive, action: ActionUpdated, effects: refreshPlan},
	{from: StatusDraft, event: EventUpdate, to: StatusDraft, action: ActionUpdated, effects: refreshPlan},
	// A live job's plan is paid for, or invoiced to a qualified caller, before it
	// applies: any other caller's update keeps the plan (a draft's is paid
	// before it is published).
	{from: StatusActive, event: EventUpdate, cond: facts.isQualified, to: StatusActive, action: ActionUpdated, effects: refreshPlan},
	{from: StatusActive, event: EventUpdate, to: StatusActive, action: ActionUpdated},
	{from: StatusPaused, event: EventUpdate, to: StatusPaused, action: ActionUpdated},
	{from: StatusExpired, event: EventUpdate, to: StatusExpired, action: ActionUpdated},
	{from: StatusClosed, event: EventUpdate, to: StatusClosed, action: ActionUpdated},

	{from: StatusDraft, event: EventPublish, cond: facts.paidOrFree, to: StatusActive, action: ActionPublished, effects: newPeriod},
	{from: StatusDraft, event: EventPublish, refuse: "This job's plan is paid and not paid yet; complete the payment at payment_url and it is published", payFirst: true},
	{from: StatusActive, event: EventPublish, to: StatusActive, action: "already_active"},
	{from: StatusPaused, event: EventPublish, refuse: "This job is paused; resume it to publish it again"},
	{from: StatusExpired, event: EventPublish, refuse: "This job has expired; relist it to publish it again"},

	{from: StatusActive, event: EventPause, to: StatusPaused, action: ActionPaused, effects: stopClock},
	{from: StatusPaused, event: EventPause, to: StatusPaused, action: "already_paused"},

	{from: StatusPaused, event: EventResume, to: StatusActive, action: ActionResumed, effects: restartClock},
	{from: StatusActive, event: EventResume, to: StatusActive, action: "already_active"},

	{from: StatusExpired, event: EventRelist, cond: facts.planFree, to: StatusActive, action: ActionRelisted, effects: newPeriod},
	{from: StatusExpired, event: EventRelist, refuse: "This job's plan is paid: a relisting needs a new payment; complete it at payment_url and the job is relisted", payFirst: true},
	{from: StatusActive, event: EventRelist, to: StatusActive, action: "already_active"},

	{from: StatusActive, event: EventClose, to: StatusClosed, action: ActionClosed},
	{from: StatusPaused, event: EventClose, to: StatusClosed, action: ActionClosed},
	{from: StatusClosed, event: EventClose, to: StatusClosed, action: "already_closed"},

	// The spec: unpublishing keeps the record; expired or closed is already unpublished.
	{from: StatusActive, event: EventUnpublish, to: StatusExpired, action: ActionUnpublished},
	{from: StatusDraft, event: EventUnpublish, to: StatusExpired, action: ActionUnpublished},
	{from: StatusPaused, event: EventUnpublish, to: StatusExpired, action: ActionUnpublished},
	{from: StatusExpired, event: EventUnpublish, to: StatusExpired, action: ActionAlreadyUnpublished},
	{from: StatusClosed, event: EventUnpublish, to: StatusClosed, action: ActionAlreadyUnpublished},

	// Only an active job's clock runs; a paused job's stopped with it.
	{from: StatusActive, event: EventExpire, cond: facts.due, to: StatusExpired, action: ActionExpired},
	{from: StatusActive, event: EventExpire, to: StatusActive, action: ActionNotDue},

	// A payment publishes a paid plan's draft and relists an expired job; on
	// a job that is live it only settles the bill.
	{from: StatusDraft, event: EventPaid, to: StatusActive, action: ActionPublished, effects: markPaid | newPeriod},
	{from: StatusExpired, event: EventPaid, to: StatusActive, action: ActionRelisted, effects: markPaid | newPeriod},
	{from: StatusActive, event: EventPaid, to: StatusActive, action: ActionPaid, effects: markPaid},
	{from: StatusPaused, event: EventPaid, to: StatusPaused, action: ActionPaid, effects: markPaid},
	{from: StatusClosed, event: EventPaid, to: StatusClosed, action: ActionRecorded},
}

func (f facts) isQualified() bool { return f.qualified }

// refusals explain, per state, why an event absent from the table is refused.
var refusals = map[string]string{
	StatusDraft:   "a draft must be published first",
	StatusActive:  "an active job can be paused, closed or unpublished",
	StatusPaused:  "a paused job can be resumed, closed or unpublished",
	StatusExpired: "an expired job can only be relisted",
	StatusClosed:  "a closed position is final; post a new job instead",
}

// Change is a decided change of one job, which the store persists. The store
// writes it only while the job is still in From (and IsPaid is still
// FromPaid); otherwise the rules are applied again to what it now is.
type Change struct {
	JobID    int64
	From     string
	FromPaid bool
	To       string
	Action   string
	effects  effect
	// Payment, when set, is recorded in the change's transaction.
	Payment *Payment
}

// Writes reports whether the change writes anything.
func (c Change) Writes() bool {
	return c.To != c.From || c.effects&(newPeriod|stopClock|restartClock|markPaid) != 0 || c.Payment != nil
}

// NewPeriod, StopClock, RestartClock and MarkPaid tell the store what to write.
func (c Change) NewPeriod() bool    { return c.effects&newPeriod != 0 }
func (c Change) StopClock() bool    { return c.effects&stopClock != 0 }
func (c Change) RestartClock() bool { return c.effects&restartClock != 0 }
func (c Change) MarkPaid() bool     { return c.effects&markPaid != 0 && !c.FromPaid }

// Schedule reports whether the job's expiry timer must be (re)armed: the job
// is active afterwards with an expiration date that may have moved.
func (c Change) Schedule() bool {
	return c.To == StatusActive && c.effects&(newPeriod|restartClock) != 0
}

// ConflictError is an event the table refuses in the job's state (409).
type ConflictError struct {
	Message    string
	Status     string  // the job's status
	PaymentURL *string // set when a payment would allow the event
}

func (e *ConflictError) Error() string { return e.Message }

// decide applies the table to one job and one event.
func decide(f facts, ev Event) (Change, error) {
	for _, t := range table {
		if t.from != f.job.Status || t.event != ev || t.cond != nil && !t.cond(f) {
			continue
		}
		if t.refuse != "" {
			return Change{}, &ConflictError{Message: t.refuse, Status: f.job.Status}
		}
		return Change{JobID: f.job.ID, From: f.job.Status, FromPaid: f.job.IsPaid, To: t.to, Action: t.action, effects: t.effects}, nil
	}
	msg := fmt.Sprintf("A %s job cannot be %s: %s", f.job.Status, pastTense(ev), refusals[f.job.Status])
	if f.job.Status == stateNone {
		msg = "No job to " + string(ev)
	}
	return Change{}, &ConflictError{Message: msg, Status: f.job.Status}
}

// needsPayment reports whether the table refuses ev for f until a payment.
func needsPayment(f facts, ev Event) bool {
	for _, t := range table {
		if t.from == f.job.Status && t.event == ev && (t.cond == nil || t.cond(f)) {
			return t.payFirst
		}
	}
	return false
}

func pastTense(ev Event) string {
	switch ev {
	case EventPublish:
		return "published"
	case EventPause:
		return "paused"
	case EventResume:
		return "resumed"
	case EventRelist:
		return "relisted"
	case EventClose:
		return "closed"
	case EventUnpublish:
		return "unpublished"
	case EventExpire:
		return "expired"
	case EventPaid:
		return "paid"
	}
	return string(ev) + "d"
}

// InitialStatus is the status of a new job of a caller.
func InitialStatus(qualified bool) string {
	c, err := decide(facts{job: Detail{}, qualified: qualified}, EventCreate)
	if err != nil {
		panic("jobbus: the table has no create line: " + err.Error())
	}
	return c.To
}

// UpdateMoves is what a fingerprint update does, for the store's single
// upsert statement: the states whose status changes (from[i] → to[i]) for
// this caller, and the states whose plan and expiration are refreshed.
func UpdateMoves(qualified bool) (from, to, refresh []string) {
	for _, s := range States {
		c, err := decide(facts{job: Detail{Status: s}, qualified: qualified}, EventUpdate)
		if err != nil {
			continue
		}
		if c.To != s {
			from, to = append(from, s), append(to, c.To)
		}
		if c.effects&refreshPlan != 0 {
			refresh = append(refresh, s)
		}
	}
	return from, to, refresh
}

// ExpiryMoves is what a due expiry does, for the store's batch statements:
// the states it moves, and to which (one) state.
func ExpiryMoves() (from []string, to string) {
	for _, s := range States {
		c, err := decide(facts{job: Detail{Status: s}, now: time.Unix(1, 0)}, EventExpire)
		if err == nil && c.To != s {
			from, to = append(from, s), c.To
		}
	}
	return from, to
}

// States are every job status.
var States = []string{StatusDraft, StatusActive, StatusPaused, StatusExpired, StatusClosed}

// TransitionResult is the answer of a transition.
type TransitionResult struct {
	JobID   int64
	Status  string
	Action  string
	Changed bool
	Job     Detail
}

// Payment is a payment a provider reports for a job.
type Payment struct {
	JobID     int64
	Provider  string
	Reference string
	Amount    int64 // minor units
	Currency  string
}

func (p Payment) validate() error {
	switch {
	case p.JobID < 1:
		return &validate.Error{What: "payment", Problems: []string{"job_id must be a positive integer"}}
	case p.Provider == "" || p.Reference == "":
		return &validate.Error{What: "payment", Problems: []string{"a payment needs a provider and a reference"}}
	case p.Amount < 0:
		return &validate.Error{What: "payment", Problems: []string{"amount must not be negative"}}
	}
	return nil
}
