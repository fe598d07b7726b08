// Package changes keeps the change versions of what the API serves: one
// counter per scope (every job; one space's jobs; the directory; the blog;
// the events) in Redis, bumped by every writer after its transaction commits
// and before it answers, and read by the gateway to name an answer (its
// ETag) and to key its response cache without running the query behind it.
//
// Why Redis and not a row in PostgreSQL bumped by a trigger: every gateway
// replica must see a bump at once without touching PostgreSQL (a 304 costs
// no query), and one hot row would serialise every job write of the board
// behind the one before it until its commit.
//
// Why after commit and not in the transaction: a reader that saw a bump made
// before the commit could run its query before the commit and store the old
// answer under the new version. Bumped after the commit and before the
// answer, every request that starts after a write was acknowledged reads the
// new version, and an answer stored under the old one is never served again.
//
// A scope's key exists only once a writer has ensured or bumped it, and a
// reader that finds a key missing (Redis restarted, a writer never ran)
// caches nothing for it: a version is never made up by a reader. A new key
// starts at the time in microseconds, so a counter that Redis lost never
// counts again through values it had before (an ETag a client still holds
// cannot match a different answer).
package changes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// key names a scope's counter. Every key has the hash tag {cv}: on a Redis
// Cluster they share one slot, so one MGET reads any set of them.
func (v *Versions) key(scope string) string { return v.prefix + "cv:{cv}:" + scope }

// Versions reads and bumps the counters. A nil *Versions bumps nothing and
// reads nothing (no REDIS_URL).
type Versions struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
}

// New keeps the counters in rdb under prefix (REDIS_KEY_PREFIX: the same on
// every process of a deployment, and another deployment's on a shared Redis).
func New(rdb redis.UniversalClient, prefix string) *Versions {
	return &Versions{rdb: rdb, prefix: prefix, now: time.Now}
}

// Close closes the Redis client (nil: nothing to close).
func (v *Versions) Close() error {
	if v == nil {
		return nil
	}
	return v.rdb.Close()
}

// bump increments each key that exists and starts each missing one at
// ARGV[1] (microseconds): atomic, so two writers never both start a key.
var bump = redis.NewScript(`
for _, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 1 then redis.call('INCR', k) else redis.call('SET', k, ARGV[1]) end
end
return #KEYS`)

// Bump moves each scope to a new version. Called after the write's commit
// and before its answer; it tries three times, backing off briefly, since a
// writer that cannot bump must not acknowledge as if it had (the caller
// answers an error, and a retry of the write bumps again).
func (v *Versions) Bump(ctx context.Context, scopes ...string) error {
	if v == nil || len(scopes) == 0 {
		return nil
	}
	keys := make([]string, len(scopes))
	for i, s := range scopes {
		keys[i] = v.key(s)
	}
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("bump change versions: %w", errors.Join(err, ctx.Err()))
			case <-time.After(time.Duration(attempt) * 35 * time.Millisecond):
			}
		}
		if err = bump.Run(ctx, v.rdb, keys, v.now().UnixMicro()).Err(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("bump change versions %v: %w", scopes, err)
}

// Ensure creates the scopes' counters that are missing, without bumping
// the others. A service calls it at start and then every few seconds
// (Keep), so that after Redis lost its data the readers cache again soon,
// not only after the next write.
func (v *Versions) Ensure(ctx context.Context, scopes ...string) error {
	if v == nil || len(scopes) == 0 {
		return nil
	}
	start := v.now().UnixMicro()
	pipe := v.rdb.Pipeline()
	for _, s := range scopes {
		pipe.SetNX(ctx, v.key(s), start, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ensure change versions %v: %w", scopes, err)
	}
	return nil
}

// Keep ensures the scopes every interval until ctx ends; failures are left
// to the next round (readers cache nothing while a key is missing).
func (v *Versions) Keep(ctx context.Context, interval time.Duration, scopes ...string) {
	if v == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = v.Ensure(ctx, scopes...)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ErrMissing is returned by Read when a scope has no counter yet.
var ErrMissing = errors.New("change version missing")

// Read appends the scopes' versions to dst in one round trip. A missing
// counter is ErrMissing: the caller must not cache or name an answer then.
func (v *Versions) Read(ctx context.Context, dst []uint64, scopes ...string) ([]uint64, error) {
	if v == nil {
		return dst, ErrMissing
	}
	var keys [4]string
	ks := keys[:0]
	for _, s := range scopes {
		ks = append(ks, v.key(s))
	}
	vals, err := v.rdb.MGet(ctx, ks...).Result()
	if err != nil {
		return dst, fmt.Errorf("read change versions: %w", err)
	}
	return appendVersions(dst, vals, nil)
}

// appendVersions appends the MGET answers vals[at[i]] (every one in order
// when at is nil) to dst; a missing counter is ErrMissing.
func appendVersions(dst []uint64, vals []any, at []int) ([]uint64, error) {
	n := len(at)
	if at == nil {
		n = len(vals)
	}
	for i := range n {
		j := i
		if at != nil {
			j = at[i]
		}
		s, ok := vals[j].(string)
		if !ok {
			return dst, ErrMissing
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return dst, fmt.Errorf("read change versions: %q: %w", s, err)
		}
		dst = append(dst, v)
	}
	return dst, nil
}
