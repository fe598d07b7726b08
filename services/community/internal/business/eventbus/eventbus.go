// Package eventbus holds the rules about coworking events: who sees which
// events, what "upcoming" means, and the storage the rules need.
package eventbus

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors the handlers map to envelope codes.
var (
	// ErrOtherSpace: a space-scoped caller asked for another space's events.
	ErrOtherSpace = errors.New("events of another space")
	// ErrInvalid: an event to store breaks a rule (seed input).
	ErrInvalid = errors.New("invalid event")
)

// Event is one coworking event. Optional text is empty when absent.
type Event struct {
	ID              int64
	Slug            string
	Title           string
	Summary         string
	Description     string
	StartsAt        time.Time
	EndsAt          time.Time
	Timezone        string // IANA name, e.g. Europe/Berlin
	Online          bool
	OnlineURL       string
	VenueName       string
	VenueAddress    string
	CityName        string
	CitySlug        string
	SpaceID         int64 // 0 = not held in a space
	SpaceName       string
	RegistrationURL string
	IsFree          bool
	Tags            []string
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Location is the event's time zone (UTC when the stored name is unknown).
func (e Event) Location() *time.Location {
	if loc, err := time.LoadLocation(e.Timezone); err == nil {
		return loc
	}
	return time.UTC
}

// Filter narrows a listing. Zero values mean "no filter". Without From only
// upcoming events (ending at or after Now) are listed; From opens the past.
type Filter struct {
	CitySlug string
	SpaceID  int64
	From     *time.Time // events ending at or after From
	To       *time.Time // events starting before To
	Now      time.Time
}

// Page is a 1-based page of Size items.
type Page struct {
	Number int
	Size   int
}

// Offset of the page's first item.
func (p Page) Offset() int { return (p.Number - 1) * p.Size }

// Caller is what the rules need to know about who asks.
type Caller struct {
	SpaceID int64 // 0 = not space-scoped
}

// Storer is the storage the rules need.
type Storer interface {
	Query(ctx context.Context, f Filter, offset, limit int) ([]Event, error)
	Count(ctx context.Context, f Filter) (int, error)
	Upsert(ctx context.Context, e Event) (Event, error)
	// Changed is when the upcoming events as of now last changed: an event
	// was written, or one ended and left them.
	Changed(ctx context.Context, now time.Time) (time.Time, error)
}

// Business applies the event rules.
type Business struct {
	store Storer
	now   func() time.Time
}

// New returns the event rules over store.
func New(store Storer) *Business { return &Business{store: store, now: time.Now} }

// Query lists events for caller. A space-scoped caller sees only its own
// space's events; naming another space is ErrOtherSpace.
func (b *Business) Query(ctx context.Context, caller Caller, f Filter, p Page) ([]Event, int, error) {
	if caller.SpaceID != 0 {
		if f.SpaceID != 0 && f.SpaceID != caller.SpaceID {
			return nil, 0, ErrOtherSpace
		}
		f.SpaceID = caller.SpaceID
	}
	if f.Now.IsZero() {
		f.Now = b.now()
	}
	total, err := b.store.Count(ctx, f)
	if err != nil {
		return nil, 0, fmt.Errorf("count events: %w", err)
	}
	if total == 0 || p.Offset() >= total {
		return []Event{}, total, nil
	}
	events, err := b.store.Query(ctx, f, p.Offset(), p.Size)
	if err != nil {
		return nil, 0, fmt.Errorf("query events: %w", err)
	}
	return events, total, nil
}

// Upcoming returns at most limit events that have not ended, soonest first
// (the public feed).
func (b *Business) Upcoming(ctx context.Context, limit int) ([]Event, error) {
	events, err := b.store.Query(ctx, Filter{Now: b.now()}, 0, limit)
	if err != nil {
		return nil, fmt.Errorf("upcoming events: %w", err)
	}
	return events, nil
}

// Feed returns the upcoming events, soonest first, and when they last
// changed (the feeds' Last-Modified).
func (b *Business) Feed(ctx context.Context, limit int) ([]Event, time.Time, error) {
	now := b.now()
	events, err := b.store.Query(ctx, Filter{Now: now}, 0, limit)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("upcoming events: %w", err)
	}
	changed, err := b.store.Changed(ctx, now)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("events changed: %w", err)
	}
	return events, changed, nil
}

// Save creates or updates an event by slug (the seed uses it).
func (b *Business) Save(ctx context.Context, e Event) (Event, error) {
	var problems []error
	if e.Slug == "" || e.Title == "" {
		problems = append(problems, errors.New("slug and title are required"))
	}
	if e.EndsAt.Before(e.StartsAt) {
		problems = append(problems, errors.New("ends_at is before starts_at"))
	}
	if _, err := time.LoadLocation(e.Timezone); err != nil || e.Timezone == "" {
		problems = append(problems, fmt.Errorf("unknown time zone %q", e.Timezone))
	}
	if !e.Online && e.VenueName == "" {
		problems = append(problems, errors.New("an in-person event needs a venue"))
	}
	if e.Online && e.OnlineURL == "" {
		problems = append(problems, errors.New("an online event needs an online_url"))
	}
	if len(problems) > 0 {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(problems...))
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	saved, err := b.store.Upsert(ctx, e)
	if err != nil {
		return Event{}, fmt.Errorf("save event %s: %w", e.Slug, err)
	}
	return saved, nil
}
