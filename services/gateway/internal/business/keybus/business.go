package keybus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Business manages keys and authenticates presented ones.
type Business struct {
	store    Storer
	log      *slog.Logger
	cacheTTL time.Duration
	rules    Rules
	now      func() time.Time

	mu    sync.RWMutex
	cache map[[32]byte]cacheEntry

	touchMu sync.Mutex
	touched map[int64]time.Time // last time last_used_at was written per key
	pending map[int64]struct{}
}

type cacheEntry struct {
	key     *Key // nil: known not to be a valid key
	err     error
	expires time.Time
}

// maxCache bounds the cache so a flood of random keys cannot grow memory.
const maxCache = 50_000

// touchEvery throttles last_used_at writes to one per key per interval.
const touchEvery = time.Minute

// New returns the key business. cacheTTL bounds how long a revoked key
// may still be accepted by a gateway instance that saw it valid (0 disables
// the cache).
func New(store Storer, log *slog.Logger, cacheTTL time.Duration) *Business {
	return &Business{
		store: store, log: log, cacheTTL: cacheTTL, now: time.Now,
		cache: map[[32]byte]cacheEntry{}, touched: map[int64]time.Time{}, pending: map[int64]struct{}{},
	}
}

// WithRules sets the deployment's rules of key management (the rate limit
// ceiling) and returns b.
func (b *Business) WithRules(r Rules) *Business {
	b.rules = r
	return b
}

// Create stores a new key for the operator's command (any space, scope or
// importer flag) and returns it with the full key string, which is never
// available again.
func (b *Business) Create(ctx context.Context, n NewKey) (Key, string, error) {
	if err := n.Validate(); err != nil {
		return Key{}, "", err
	}
	return b.create(ctx, Operator(), n)
}

// create stores a validated key with its audit event, in one transaction.
func (b *Business) create(ctx context.Context, a Actor, n NewKey) (Key, string, error) {
	raw, k, err := newKey(n)
	if err != nil {
		return Key{}, "", err
	}
	var stored Key
	err = b.store.InTx(ctx, func(s Storer) error {
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

func newKey(n NewKey) (string, Key, error) {
	prefix := PrefixLive
	if n.Restricted {
		prefix = PrefixRestricted
	}
	raw, err := Generate(prefix)
	if err != nil {
		return "", Key{}, err
	}
	return raw, Key{
		Name: n.Name, Prefix: prefix, Hint: Hint(raw), SpaceID: n.SpaceID, Scopes: n.Scopes,
		RateLimitPerMinute: n.RateLimitPerMinute, TrustedImporter: n.TrustedImporter, Hash: Hash(raw),
		CreatedByKeyID: n.createdBy,
	}, nil
}

// List returns every key (never a secret), for the operator.
func (b *Business) List(ctx context.Context) ([]Key, error) { return b.store.List(ctx) }

// Revoke revokes a key for the operator's command.
func (b *Business) Revoke(ctx context.Context, id int64) error {
	k, err := b.store.ByID(ctx, id)
	if err != nil {
		return err
	}
	return b.revoke(ctx, Operator(), k)
}

// revoke stops k now and records who did it; revoking a revoked key changes
// nothing and records nothing.
func (b *Business) revoke(ctx context.Context, a Actor, k Key) error {
	now := b.now()
	err := b.store.InTx(ctx, func(s Storer) error {
		changed, err := s.Revoke(ctx, k.ID, now)
		if err != nil || !changed {
			return err
		}
		ev := a.event(k, EventRevoked)
		ev.EffectiveAt = now
		return s.AddEvent(ctx, ev)
	})
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	b.forget(k.Hash)
	return nil
}

// Rotate revokes a key at once and creates its replacement with the same
// settings, for the operator's command, returning the new full key once.
func (b *Business) Rotate(ctx context.Context, id int64) (Key, string, error) {
	return b.RotateWithGrace(ctx, id, 0)
}

// RotateWithGrace is Rotate with the old key working for grace more.
func (b *Business) RotateWithGrace(ctx context.Context, id int64, grace time.Duration) (Key, string, error) {
	old, err := b.store.ByID(ctx, id)
	if err != nil {
		return Key{}, "", err
	}
	return b.rotate(ctx, Operator(), old, grace)
}

// rotate replaces old with a new key of the same settings; old keeps
// working for grace.
func (b *Business) rotate(ctx context.Context, a Actor, old Key, grace time.Duration) (Key, string, error) {
	now := b.now()
	if old.RevokedBy(now) || (old.RevokedAt != nil && old.ReplacedBy != 0) {
		return Key{}, "", ErrRevoked
	}
	raw, k, err := newKey(NewKey{
		Name: old.Name, Restricted: !old.Live(), SpaceID: old.SpaceID, Scopes: old.Scopes,
		RateLimitPerMinute: old.RateLimitPerMinute, TrustedImporter: old.TrustedImporter, createdBy: old.CreatedByKeyID,
	})
	if err != nil {
		return Key{}, "", err
	}
	stopsAt := now.Add(grace)
	var stored Key
	err = b.store.InTx(ctx, func(s Storer) error {
		if stored, err = s.Create(ctx, k); err != nil {
			return err
		}
		if err := s.Replace(ctx, old.ID, stored.ID, stopsAt); err != nil {
			return err
		}
		ev := a.event(old, EventRotated)
		ev.ReplacementID, ev.EffectiveAt = stored.ID, stopsAt
		if err := s.AddEvent(ctx, ev); err != nil {
			return err
		}
		return s.AddEvent(ctx, a.event(stored, EventCreated))
	})
	if err != nil {
		return Key{}, "", fmt.Errorf("rotate key: %w", err)
	}
	b.forget(old.Hash)
	return stored, raw, nil
}

// forget drops a key from this replica's cache, so that a revocation made
// here applies here at once (other replicas within KEY_CACHE_TTL).
func (b *Business) forget(hash []byte) {
	var h [32]byte
	copy(h[:], hash)
	b.mu.Lock()
	delete(b.cache, h)
	b.mu.Unlock()
}

// Authenticate resolves a presented key. Errors: ErrMissing, ErrMalformed,
// ErrUnknown, ErrRevoked, or a storage failure (wrapped, not a sentinel).
func (b *Business) Authenticate(ctx context.Context, raw string) (*Key, error) {
	if _, err := Parse(raw); err != nil {
		return nil, err
	}
	hash := Hash(raw)
	var h [32]byte
	copy(h[:], hash)
	now := b.now()
	if b.cacheTTL > 0 {
		b.mu.RLock()
		e, ok := b.cache[h]
		b.mu.RUnlock()
		if ok && now.Before(e.expires) {
			if e.key != nil {
				b.touch(e.key.ID, now)
			}
			return e.key, e.err
		}
	}
	k, err := b.store.ByHash(ctx, hash)
	var entry cacheEntry
	switch {
	case errors.Is(err, ErrNotFound):
		entry = cacheEntry{err: ErrUnknown}
	case err != nil:
		return nil, fmt.Errorf("look up key: %w", err)
	case !ConstantTimeEqual(k.Hash, hash):
		entry = cacheEntry{err: ErrUnknown}
	case k.RevokedBy(now):
		entry = cacheEntry{err: ErrRevoked}
	default:
		entry = cacheEntry{key: &k}
	}
	if b.cacheTTL > 0 {
		entry.expires = now.Add(b.cacheTTL)
		if entry.key != nil && entry.key.RevokedAt != nil && entry.key.RevokedAt.Before(entry.expires) {
			// A key in its grace period stops at its end, not a TTL later.
			entry.expires = *entry.key.RevokedAt
		}
		b.mu.Lock()
		if len(b.cache) >= maxCache {
			clear(b.cache)
		}
		b.cache[h] = entry
		b.mu.Unlock()
	}
	if entry.key != nil {
		b.touch(entry.key.ID, now)
	}
	return entry.key, entry.err
}

// touch records use of a key; the write happens in FlushLastUsed, at most once
// per key per minute, off the request path.
func (b *Business) touch(id int64, now time.Time) {
	b.touchMu.Lock()
	if last, ok := b.touched[id]; !ok || now.Sub(last) >= touchEvery {
		b.touched[id] = now
		b.pending[id] = struct{}{}
	}
	b.touchMu.Unlock()
}

// FlushLastUsed writes pending last_used_at updates in one statement.
func (b *Business) FlushLastUsed(ctx context.Context) error {
	b.touchMu.Lock()
	if len(b.pending) == 0 {
		b.touchMu.Unlock()
		return nil
	}
	ids := make([]int64, 0, len(b.pending))
	for id := range b.pending {
		ids = append(ids, id)
	}
	clear(b.pending)
	b.touchMu.Unlock()
	return b.store.TouchLastUsed(ctx, ids, b.now())
}

// RunLastUsedFlusher flushes every interval until ctx ends, then once more.
func (b *Business) RunLastUsedFlusher(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = b.FlushLastUsed(flushCtx)
			cancel()
			return
		case <-t.C:
			if err := b.FlushLastUsed(ctx); err != nil {
				b.log.Warn("flush last_used_at", "error", err)
			}
		}
	}
}
