package keybus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors of key management; the app layer maps them to envelope codes.
var (
	// ErrForbidden: the actor may not manage keys, or may not grant what it asks.
	ErrForbidden = errors.New("not allowed")
	// ErrInvalid: the request is malformed (422).
	ErrInvalid = errors.New("invalid key request")
	// ErrTooMany: the owner holds MaxActiveKeys active keys already.
	ErrTooMany = errors.New("too many keys")
	// ErrLastManager: the revocation would leave the owner without a key
	// that can manage keys, and the caller did not say it meant that.
	ErrLastManager = errors.New("last key manager")
)

// Limits of key management.
const (
	// MaxActiveKeys bounds the keys an owner holds at once: each key has its
	// own write budget, so unbounded keys would be an unbounded budget.
	MaxActiveKeys = 25
	// MaxGrace bounds how long a rotated key keeps working.
	MaxGrace = 7 * 24 * time.Hour
	// DefaultMaxRateLimit is the ceiling on a key's rate_limit_per_minute
	// unless the operator sets another (KEY_MAX_RATE_LIMIT_PER_MINUTE).
	DefaultMaxRateLimit = 600
)

// Audit event names and actor kinds (key_events).
const (
	EventCreated = "created"
	EventRotated = "rotated"
	EventRevoked = "revoked"
	// EventRotateRefused records a rotation refused because the caller may
	// not create the key it asked to renew (the attempt is the signal).
	EventRotateRefused = "rotate_refused"

	ActorKey       = "key"
	ActorDashboard = "dashboard"
	ActorOperator  = "operator"
)

// Owner names whose keys are managed together: a space's keys, or the keys
// without a space that one platform key created.
type Owner struct {
	SpaceID   int64
	CreatedBy int64 // with SpaceID 0
}

// Actor is who manages keys: a key over /v2/keys, a dashboard user acting
// for one space, or the operator's command.
type Actor struct {
	Kind  string
	Key   *Key   // ActorKey
	Email string // ActorDashboard
	// SpaceID is the space a dashboard user acts for, with their role in
	// it and whether it is Pro (the directory's word).
	SpaceID int64
	Role    string
	Pro     bool
	IP      string
}

// KeyActor is a key calling the key API from ip.
func KeyActor(k *Key, ip string) Actor { return Actor{Kind: ActorKey, Key: k, IP: ip} }

// Roles of space_admins that manage keys; an editor manages jobs only.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleEditor = "editor"
)

// DashboardActor is a user signed in to the dashboard acting for space,
// where they hold role; pro is whether the space is a Pro space.
func DashboardActor(email string, space int64, role string, pro bool, ip string) Actor {
	return Actor{Kind: ActorDashboard, Email: email, SpaceID: space, Role: role, Pro: pro, IP: ip}
}

// MayManageKeys reports whether a dashboard user of role in a space that is
// (or is not) Pro sees the space's keys.
func MayManageKeys(role string, pro bool) bool {
	return pro && (role == RoleOwner || role == RoleAdmin)
}

// Operator is the operator's command.
func Operator() Actor { return Actor{Kind: ActorOperator} }

// Owner is whose keys the actor manages.
func (a Actor) Owner() Owner {
	switch {
	case a.Kind == ActorDashboard:
		return Owner{SpaceID: a.SpaceID}
	case a.Kind == ActorKey && a.Key.SpaceID != 0:
		return Owner{SpaceID: a.Key.SpaceID}
	case a.Kind == ActorKey:
		return Owner{CreatedBy: a.Key.ID}
	}
	return Owner{}
}

// owns reports whether k is among the actor's keys.
func (a Actor) owns(k Key) bool {
	o := a.Owner()
	if o.SpaceID != 0 {
		return k.SpaceID == o.SpaceID
	}
	return o.CreatedBy != 0 && k.SpaceID == 0 && k.CreatedByKeyID == o.CreatedBy
}

func (a Actor) event(k Key, name string) Event {
	e := Event{KeyID: k.ID, SpaceID: k.SpaceID, OwnerKeyID: k.CreatedByKeyID, Event: name, Actor: a.Kind,
		Email: a.Email, IP: a.IP}
	if a.Key != nil {
		e.ActorKeyID = a.Key.ID
	}
	return e
}

// Event is one line of the audit log.
type Event struct {
	ID            int64
	KeyID         int64
	SpaceID       int64
	OwnerKeyID    int64
	Event         string
	Actor         string
	ActorKeyID    int64
	Email         string
	IP            string
	ReplacementID int64
	// EffectiveAt is when the event takes effect: a rotated key's end of grace.
	EffectiveAt time.Time
	OccurredAt  time.Time
}

// KeyRequest is what a key's owner asks for.
type KeyRequest struct {
	Name               string
	Scopes             []string
	Restricted         bool
	RateLimitPerMinute int
	// RateLimitGiven: RateLimitPerMinute was sent (0 is then out of range).
	RateLimitGiven bool
}

// SetRateLimit takes rate_limit_per_minute as sent (nil: not sent), out of
// int's range kept out of range so that the rules refuse it.
func (r *KeyRequest) SetRateLimit(v *int64) {
	if v != nil {
		r.RateLimitPerMinute, r.RateLimitGiven = int(max(min(*v, 1<<31-1), -1)), true
	}
}

// Rules of key management that depend on the deployment.
type Rules struct {
	// MaxRateLimit is the operator's ceiling on a key's rate_limit_per_minute.
	MaxRateLimit int
}

// covers reports whether holding held lets a key grant s: the scope itself,
// or a broader one (write covers read and jobs:write; read or write cover
// each resource's read scope).
func covers(held []string, s string) bool {
	if slices.Contains(held, s) {
		return true
	}
	hasRead := slices.Contains(held, ScopeRead) || slices.Contains(held, ScopeWrite)
	switch s {
	case ScopeRead:
		return slices.Contains(held, ScopeWrite)
	case ScopeJobsRead, ScopeSpacesRead, ScopeEventsRead, ScopeCitiesRead:
		return hasRead
	case ScopeJobsWrite:
		return slices.Contains(held, ScopeWrite)
	}
	return false
}

// mayManage checks the actor may use the key API at all.
func (a Actor) mayManage() error {
	switch a.Kind {
	case ActorKey:
		if a.Key == nil || !a.Key.Live() {
			return fmt.Errorf("%w: restricted keys (svc_rstr_) cannot manage keys", ErrForbidden)
		}
		if !slices.Contains(a.Key.Scopes, ScopeKeysManage) {
			return fmt.Errorf("%w: this key lacks the scope %s", ErrForbidden, ScopeKeysManage)
		}
	case ActorDashboard:
		if a.SpaceID <= 0 || !MayManageKeys(a.Role, a.Pro) {
			return fmt.Errorf("%w: only the owners and admins of a Pro space manage its keys", ErrForbidden)
		}
	case ActorOperator:
	default:
		return fmt.Errorf("%w: unknown actor", ErrForbidden)
	}
	return nil
}

// Problems of a key request, each naming its field, for a 422.
type Problems []string

func (p Problems) Error() string { return strings.Join(p, "; ") }

// Is makes a Problems match ErrInvalid.
func (p Problems) Is(target error) bool { return target == ErrInvalid }

// check validates r for actor a: the field rules (a 422 naming each field),
// then what a may grant (a 403 naming the scope).
func (r *KeyRequest) check(a Actor, rules Rules) (NewKey, error) {
	n := NewKey{Name: r.Name, Restricted: r.Restricted, Scopes: slices.Clone(r.Scopes), RateLimitPerMinute: r.RateLimitPerMinute}
	var probs Problems
	n.Name = strings.TrimSpace(n.Name)
	if err := (&NewKey{Name: n.Name, Scopes: []string{ScopeRead}}).Validate(); err != nil {
		probs = append(probs, err.Error())
	}
	o := a.Owner()
	allowed := AllScopes
	if o.SpaceID != 0 {
		allowed = SpaceKeyScopes
	}
	if len(n.Scopes) == 0 {
		probs = append(probs, "scopes must hold at least one scope")
	}
	for _, s := range n.Scopes {
		if !slices.Contains(AllScopes, s) {
			probs = append(probs, fmt.Sprintf("scopes holds an unknown scope %q (valid: %s)", s, strings.Join(allowed, ", ")))
		}
	}
	ceiling := rules.MaxRateLimit
	if ceiling <= 0 {
		ceiling = DefaultMaxRateLimit
	}
	if limit := n.RateLimitPerMinute; limit < 0 || limit > ceiling || (r.RateLimitGiven && limit == 0) {
		probs = append(probs, fmt.Sprintf("rate_limit_per_minute must be between 1 and %d (or omitted for the default)", ceiling))
	}
	if len(probs) > 0 {
		return NewKey{}, probs
	}
	slices.Sort(n.Scopes)
	n.Scopes = slices.Compact(n.Scopes)
	if err := a.mayGrant(n.Scopes, n.Restricted, false); err != nil {
		return NewKey{}, err
	}
	n.SpaceID = o.SpaceID
	n.createdBy = o.CreatedBy
	if a.Kind == ActorKey && o.SpaceID != 0 {
		// Who created a space's key is the audit log's to tell; the space owns it.
		n.createdBy = a.Key.ID
	}
	return n, nil
}

// mayGrant is the one rule of what an actor may put in a key it creates or
// rotates: every scope allowed for its owner (a space's keys: SpaceKeyScopes)
// and, for a key, covered by the key's own scopes; a live key only from a
// live caller; a trusted-importer key only from the operator. A dashboard
// user acts as the space's owner and may grant any of SpaceKeyScopes.
func (a Actor) mayGrant(scopes []string, restricted, trusted bool) error {
	if a.Kind == ActorOperator {
		return nil
	}
	allowed := AllScopes
	if a.Owner().SpaceID != 0 {
		allowed = SpaceKeyScopes
	}
	for _, s := range scopes {
		if !slices.Contains(allowed, s) {
			return fmt.Errorf("%w: the scope %s cannot be given to a space's key (allowed: %s)", ErrForbidden, s, strings.Join(allowed, ", "))
		}
		if a.Kind == ActorKey && !covers(a.Key.Scopes, s) {
			return fmt.Errorf("%w: this key cannot grant the scope %s, which it does not hold", ErrForbidden, s)
		}
	}
	if a.Kind == ActorKey && !a.Key.Live() && !restricted {
		return fmt.Errorf("%w: a restricted key cannot create a live key", ErrForbidden)
	}
	if trusted {
		return fmt.Errorf("%w: only the operator creates trusted-importer keys, so only the operator (or the key itself) rotates one", ErrForbidden)
	}
	return nil
}

// CreateFor creates a key for the actor's owner: the full key is returned
// this once.
func (b *Business) CreateFor(ctx context.Context, a Actor, r KeyRequest) (Key, string, error) {
	if err := a.mayManage(); err != nil {
		return Key{}, "", err
	}
	n, err := r.check(a, b.rules)
	if err != nil {
		return Key{}, "", err
	}
	raw, k, err := newKey(n)
	if err != nil {
		return Key{}, "", err
	}
	var stored Key
	err = b.store.InTx(ctx, func(s Storer) error {
		o := a.Owner()
		if err := s.LockOwner(ctx, o); err != nil {
			return err
		}
		keys, err := s.Owned(ctx, o)
		if err != nil {
			return err
		}
		now := b.now()
		active := 0
		for _, k := range keys {
			if !k.RevokedBy(now) {
				active++
			}
		}
		if active >= MaxActiveKeys {
			return fmt.Errorf("%w: at most %d active keys; revoke one first", ErrTooMany, MaxActiveKeys)
		}
		if stored, err = s.Create(ctx, k); err != nil {
			return err
		}
		return s.AddEvent(ctx, a.event(stored, EventCreated))
	})
	if err != nil {
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	return stored, raw, nil
}

// ListFor lists the actor's keys, newest first (never a secret).
func (b *Business) ListFor(ctx context.Context, a Actor) ([]Key, error) {
	if err := a.mayManage(); err != nil {
		return nil, err
	}
	return b.store.Owned(ctx, a.Owner())
}

// GetFor returns one of the actor's keys; another owner's is ErrNotFound,
// as an unknown id is, so ids reveal nothing.
func (b *Business) GetFor(ctx context.Context, a Actor, id int64) (Key, error) {
	if err := a.mayManage(); err != nil {
		return Key{}, err
	}
	k, err := b.store.ByID(ctx, id)
	if err != nil {
		return Key{}, err
	}
	if !a.owns(k) {
		return Key{}, ErrNotFound
	}
	return k, nil
}

// RevokeFor revokes one of the actor's keys at once (a revoked key again:
// nothing changes). Over the key API, revoking the owner's last active key
// that can manage keys is refused with ErrLastManager unless allowNoManager.
func (b *Business) RevokeFor(ctx context.Context, a Actor, id int64, allowNoManager bool) error {
	k, err := b.GetFor(ctx, a, id)
	if err != nil {
		return err
	}
	now := b.now()
	if k.RevokedBy(now) {
		return nil
	}
	err = b.store.InTx(ctx, func(s Storer) error {
		o := a.Owner()
		if err := s.LockOwner(ctx, o); err != nil {
			return err
		}
		if a.Kind == ActorKey && !allowNoManager && isManager(k, now) {
			keys, err := s.Owned(ctx, o)
			if err != nil {
				return err
			}
			others := 0
			for _, other := range keys {
				if other.ID != k.ID && isManager(other, now) && other.RevokedAt == nil {
					others++
				}
			}
			if others == 0 {
				return ErrLastManager
			}
		}
		changed, err := s.Revoke(ctx, k.ID, now)
		if err != nil || !changed {
			return err
		}
		ev := a.event(k, EventRevoked)
		ev.EffectiveAt = now
		return s.AddEvent(ctx, ev)
	})
	if err != nil {
		if errors.Is(err, ErrLastManager) {
			return err
		}
		return fmt.Errorf("revoke key: %w", err)
	}
	b.forget(k.Hash)
	return nil
}

func isManager(k Key, now time.Time) bool {
	return k.Live() && !k.RevokedBy(now) && slices.Contains(k.Scopes, ScopeKeysManage)
}

// RotateFor replaces one of the actor's keys with a new one of the same
// settings (returned this once); the old one works for grace more (0: it
// stops at once; at most MaxGrace).
func (b *Business) RotateFor(ctx context.Context, a Actor, id int64, grace time.Duration) (Key, string, error) {
	if grace < 0 || grace > MaxGrace {
		return Key{}, "", Problems{fmt.Sprintf("grace_seconds must be between 0 and %d", int(MaxGrace.Seconds()))}
	}
	old, err := b.GetFor(ctx, a, id)
	if err != nil {
		return Key{}, "", err
	}
	// Rotation mints a key of old's settings: the caller must be able to
	// create that key (a key renewing itself grants nothing it lacks).
	self := a.Kind == ActorKey && a.Key.ID == old.ID
	if !self {
		err := a.mayGrant(old.Scopes, !old.Live(), old.TrustedImporter)
		if err == nil && old.RateLimitPerMinute > b.MaxRateLimit() {
			err = fmt.Errorf("%w: this key's rate_limit_per_minute (%d) is above the %d a caller may set; ask the operator", ErrForbidden, old.RateLimitPerMinute, b.MaxRateLimit())
		}
		if err != nil {
			if rerr := b.store.AddEvent(ctx, a.event(old, EventRotateRefused)); rerr != nil {
				b.log.Warn("record refused rotation", "key_id", old.ID, "error", rerr)
			}
			return Key{}, "", err
		}
	}
	return b.rotate(ctx, a, old, grace)
}

// EventsFor lists the audit log of the actor's keys, newest first, limit
// events with ids below before (0: from the newest).
func (b *Business) EventsFor(ctx context.Context, a Actor, before int64, limit int) ([]Event, error) {
	if err := a.mayManage(); err != nil {
		return nil, err
	}
	return b.store.Events(ctx, a.Owner(), before, limit)
}

// MaxRateLimit is the ceiling on a key's rate_limit_per_minute.
func (b *Business) MaxRateLimit() int {
	if b.rules.MaxRateLimit > 0 {
		return b.rules.MaxRateLimit
	}
	return DefaultMaxRateLimit
}
