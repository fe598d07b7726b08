// Package keybus holds the rules of API keys: their format, scopes, storage
// contract, and authentication with a short-lived cache on the hot path.
package keybus

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds a key's name, in characters.
const MaxNameLen = 200

// Key prefixes of the spec.
const (
	PrefixLive       = "svc_live_"
	PrefixRestricted = "svc_rstr_"
)

// secretLen is the length of the random part: 40 base62 characters ≈ 238 bits.
const secretLen = 40

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Scopes of the spec's Authentication table.
const (
	ScopeRead       = "read"
	ScopeWrite      = "write"
	ScopeJobsRead   = "jobs:read"
	ScopeJobsWrite  = "jobs:write"
	ScopeSpacesRead = "spaces:read"
	ScopeEventsRead = "events:read"
	ScopeCitiesRead = "cities:read"
	// ScopeKeysManage grants the key API (/v2/keys): a key manages its
	// space's keys, or a platform key those it created, never granting a
	// scope it does not hold.
	ScopeKeysManage = "keys:manage"
	ScopeWebhooks   = "webhooks:manage"
	// ScopeAlertsWrite lets a platform key save job alerts for its users
	// (POST /v2/alerts, still confirmed by the seeker's click).
	ScopeAlertsWrite = "alerts:write"
)

// AllScopes lists every valid scope.
var AllScopes = []string{ScopeRead, ScopeWrite, ScopeJobsRead, ScopeJobsWrite, ScopeSpacesRead, ScopeEventsRead, ScopeCitiesRead,
	ScopeKeysManage, ScopeWebhooks, ScopeAlertsWrite}

// SpaceKeyScopes are the scopes a key of a space may be given over the key
// API or the dashboard (the operator's command may give any).
var SpaceKeyScopes = []string{ScopeRead, ScopeJobsRead, ScopeJobsWrite, ScopeSpacesRead, ScopeEventsRead, ScopeCitiesRead,
	ScopeKeysManage, ScopeWebhooks}

// Sentinel errors; the app layer maps them to envelope codes.
var (
	ErrMissing   = errors.New("api key missing")
	ErrMalformed = errors.New("api key malformed")
	ErrUnknown   = errors.New("api key unknown")
	ErrRevoked   = errors.New("api key revoked")
	ErrNotFound  = errors.New("key not found")
)

// Key is an API key as the business layer sees it (never the secret).
type Key struct {
	ID                 int64
	Name               string
	Prefix             string
	Hint               string
	SpaceID            int64 // 0: not scoped to a space
	Scopes             []string
	RateLimitPerMinute int // 0: the default
	TrustedImporter    bool
	CreatedAt          time.Time
	// RevokedAt is when the key stops (or stopped) working; a rotated key's
	// lies in the future until its grace period ends.
	RevokedAt  *time.Time
	LastUsedAt *time.Time
	// CreatedByKeyID is the key that created this one over the key API (0:
	// the operator's command or the dashboard).
	CreatedByKeyID int64
	ReplacedBy     int64 // the key a rotation replaced this one with (0: none)
	Hash           []byte
}

// Live reports whether the key may write.
func (k *Key) Live() bool { return k.Prefix == PrefixLive }

// RevokedBy reports whether the key no longer works at now.
func (k *Key) RevokedBy(now time.Time) bool { return k.RevokedAt != nil && !now.Before(*k.RevokedAt) }

// HasAnyScope reports whether the key carries one of scopes.
func (k *Key) HasAnyScope(scopes []string) bool {
	for _, s := range scopes {
		if slices.Contains(k.Scopes, s) {
			return true
		}
	}
	return false
}

// NewKey is what an operator asks for.
type NewKey struct {
	Name               string
	Restricted         bool
	SpaceID            int64
	Scopes             []string
	RateLimitPerMinute int
	TrustedImporter    bool
	createdBy          int64 // the creating key, set by the key API
}

// Validate checks a NewKey and normalises its scopes (sorted, unique).
func (n *NewKey) Validate() error {
	var errs []error
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || utf8.RuneCountInString(n.Name) > MaxNameLen || !utf8.ValidString(n.Name) {
		errs = append(errs, fmt.Errorf("name must be 1 to %d characters", MaxNameLen))
	} else if strings.IndexFunc(n.Name, unicode.IsControl) >= 0 {
		errs = append(errs, errors.New("name must not contain control characters"))
	}
	if len(n.Scopes) == 0 {
		errs = append(errs, errors.New("at least one scope is required"))
	}
	for _, s := range n.Scopes {
		if !slices.Contains(AllScopes, s) {
			errs = append(errs, fmt.Errorf("unknown scope %q (valid: %s)", s, strings.Join(AllScopes, ", ")))
		}
	}
	slices.Sort(n.Scopes)
	n.Scopes = slices.Compact(n.Scopes)
	if n.SpaceID < 0 {
		errs = append(errs, errors.New("space id must be positive"))
	}
	if n.RateLimitPerMinute < 0 {
		errs = append(errs, errors.New("rate limit must be positive"))
	}
	return errors.Join(errs...)
}

// Generate returns a new random key string with the given prefix.
func Generate(prefix string) (string, error) {
	var b strings.Builder
	b.Grow(len(prefix) + secretLen)
	b.WriteString(prefix)
	max := big.NewInt(int64(len(alphabet)))
	for range secretLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("random: %w", err)
		}
		b.WriteByte(alphabet[n.Int64()])
	}
	return b.String(), nil
}

// Parse checks the shape of a presented key without touching storage, so
// garbage is refused before any lookup.
func Parse(raw string) (prefix string, err error) {
	if raw == "" {
		return "", ErrMissing
	}
	switch {
	case strings.HasPrefix(raw, PrefixLive):
		prefix = PrefixLive
	case strings.HasPrefix(raw, PrefixRestricted):
		prefix = PrefixRestricted
	default:
		return "", ErrMalformed
	}
	secret := raw[len(prefix):]
	if len(secret) != secretLen {
		return "", ErrMalformed
	}
	for i := 0; i < len(secret); i++ {
		if strings.IndexByte(alphabet, secret[i]) < 0 {
			return "", ErrMalformed
		}
	}
	return prefix, nil
}

// Hash is the stored form of a key.
func Hash(raw string) []byte {
	sum := sha256.Sum256([]byte(raw))
	return sum[:]
}

// Hint is the part of a key shown in listings: enough to recognise it, far
// too little to use it.
func Hint(raw string) string {
	return raw[:len(raw)-secretLen+4] + "…" + raw[len(raw)-4:]
}

// ConstantTimeEqual compares two hashes without leaking where they differ.
func ConstantTimeEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// Storer is what the business layer needs from storage.
type Storer interface {
	// InTx runs fn on a store whose statements share one transaction.
	InTx(ctx context.Context, fn func(Storer) error) error
	// LockOwner serialises, until the transaction ends, the changes to one
	// owner's keys (the key cap and the last-manager rule read then write).
	LockOwner(ctx context.Context, o Owner) error
	Create(ctx context.Context, k Key) (Key, error)
	ByHash(ctx context.Context, hash []byte) (Key, error)
	ByID(ctx context.Context, id int64) (Key, error)
	List(ctx context.Context) ([]Key, error)
	// Owned lists an owner's keys, newest first.
	Owned(ctx context.Context, o Owner) ([]Key, error)
	// Revoke sets revoked_at to at unless the key already stops sooner, and
	// reports whether it changed anything.
	Revoke(ctx context.Context, id int64, at time.Time) (bool, error)
	// Replace records that old was replaced by replacement and stops at stopsAt.
	Replace(ctx context.Context, old, replacement int64, stopsAt time.Time) error
	AddEvent(ctx context.Context, e Event) error
	// Events lists an owner's key events newest first, with ids below
	// before (0: from the newest).
	Events(ctx context.Context, o Owner, before int64, limit int) ([]Event, error)
	TouchLastUsed(ctx context.Context, ids []int64, at time.Time) error
}
