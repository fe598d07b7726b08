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
//
// Redis away: a process that could not reach Redis (a command failed) stops
// asking it for a second at a time (ErrAway at once, no timeout per request),
// and its first command after Redis answers again moves the epoch, a counter
// every read includes beside the scopes it names: whatever was named, kept
// or memoised before the outage is never taken for current again, whatever
// writes were committed meanwhile without their bump (writers owe those and
// settle them when Redis returns; the epoch covers the moments between).
package changes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// key names a scope's counter. Every key has the hash tag {cv}: on a Redis
// Cluster they share one slot, so one MGET reads any set of them.
func (v *Versions) key(scope string) string { return v.prefix + "cv:{cv}:" + scope }

// epochScope is the scope every read includes (see the package comment):
// moved by a process's first command after Redis was away, created by any
// bump or ensure, never by a reader.
const epochScope = "epoch"

// pause is how long a process stops asking Redis after a command failed.
const pause = time.Second

// ErrAway is returned while Redis is not asked, for a moment after a
// command failed: the caller degrades at once instead of waiting out a
// timeout per request.
var ErrAway = errors.New("change versions: redis away")

// Versions reads and bumps the counters. A nil *Versions bumps nothing and
// reads nothing (no REDIS_URL).
type Versions struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time

	// pauseUntil (unix ns): no command is sent before it (ErrAway).
	pauseUntil atomic.Int64
	// fails counts failed commands; caughtUp is the count the last move of
	// the epoch covered (recoverEpoch, under recoverMu): Redis is away while
	// they differ, so a command failing while the epoch moves is not
	// forgotten.
	fails, caughtUp atomic.Uint64
	recoverMu       sync.Mutex
	// recoveries counts the epoch's moves after an outage.
	recoveries atomic.Int64
}

// Away reports whether Redis failed this process and the epoch has not
// moved since: reads name nothing, writers owe their bumps.
func (v *Versions) Away() bool { return v != nil && v.away() }

func (v *Versions) away() bool { return v.fails.Load() != v.caughtUp.Load() }

// AwayGauge exports Away as redis_away, the state the CoworkjobsRedisAway
// alert names.
func AwayGauge(v *Versions) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "redis_away",
		Help: "1 while Redis failed this process and the change versions have not caught up since (the epoch moved after its return): " +
			"the gateway limits per replica and serves nothing from its response cache, writers owe their announcements.",
	}, func() float64 {
		if v.Away() {
			return 1
		}
		return 0
	})
}

// Recoveries counts the epoch's moves after an outage seen by this process.
func (v *Versions) Recoveries() int64 {
	if v == nil {
		return 0
	}
	return v.recoveries.Load()
}

// ready says whether a command may be sent now: not while paused, and not
// before the epoch moved after an outage (it moves it first).
func (v *Versions) ready(ctx context.Context) error {
	if time.Now().UnixNano() < v.pauseUntil.Load() {
		return ErrAway
	}
	if v.away() {
		return v.recoverEpoch(ctx)
	}
	return nil
}

// failed notes a failed command: Redis is away (paused for a moment),
// unless it was the caller's context that ended. It returns err.
func (v *Versions) failed(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, redis.Nil) || ctx.Err() != nil {
		return err
	}
	v.pauseUntil.Store(time.Now().Add(pause).UnixNano())
	v.fails.Add(1)
	return err
}

// recoverEpoch moves the epoch once after an outage, before any command
// trusts a version again: one caller sends it, the others wait for it.
func (v *Versions) recoverEpoch(ctx context.Context) error {
	v.recoverMu.Lock()
	defer v.recoverMu.Unlock()
	if !v.away() {
		return nil
	}
	if time.Now().UnixNano() < v.pauseUntil.Load() {
		return ErrAway
	}
	covered := v.fails.Load()
	if err := bump.Run(ctx, v.rdb, []string{v.key(epochScope)}, v.now().UnixMicro(), 1).Err(); err != nil {
		return fmt.Errorf("move change versions epoch: %w", v.failed(ctx, err))
	}
	v.recoveries.Add(1)
	v.caughtUp.Store(covered)
	if v.away() { // a command failed while the epoch moved: again next time
		return ErrAway
	}
	return nil
}

// Ping asks Redis whether it answers (moving the epoch first after an
// outage) and creates the epoch if it is missing: a process calls it every
// second or so (Watch) so that it knows Redis is away, and that it is back,
// without waiting for a request.
func (v *Versions) Ping(ctx context.Context) error {
	if v == nil {
		return nil
	}
	if err := v.ready(ctx); err != nil {
		return err
	}
	if err := v.rdb.SetNX(ctx, v.key(epochScope), v.now().UnixMicro(), 0).Err(); err != nil {
		return v.failed(ctx, err)
	}
	return nil
}

// Watch pings every interval until ctx ends.
func (v *Versions) Watch(ctx context.Context, interval time.Duration) {
	if v == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		_ = v.Ping(pctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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

// bump increments each of the first ARGV[2] keys that exists and starts
// each missing one at ARGV[1] (microseconds): atomic, so two writers never
// both start a key; the keys after those (the epoch) are only created if
// missing.
var bump = redis.NewScript(`
local n = tonumber(ARGV[2])
for i, k in ipairs(KEYS) do
  if i > n then redis.call('SET', k, ARGV[1], 'NX')
  elseif redis.call('EXISTS', k) == 1 then redis.call('INCR', k) else redis.call('SET', k, ARGV[1]) end
end
return #KEYS`)

// Bump moves each scope to a new version. Called after the write's commit
// and before its answer; it tries three times, backing off briefly, unless
// Redis is away (ErrAway: at once). A writer that cannot bump must not
// acknowledge as if it had: it owes the bump where it keeps its data and
// settles it when Redis is back (the jobs service's unannounced table), or
// answers an error.
func (v *Versions) Bump(ctx context.Context, scopes ...string) error {
	if v == nil || len(scopes) == 0 {
		return nil
	}
	keys := make([]string, len(scopes), len(scopes)+1)
	for i, s := range scopes {
		keys[i] = v.key(s)
	}
	keys = append(keys, v.key(epochScope))
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("bump change versions: %w", errors.Join(err, ctx.Err()))
			case <-time.After(time.Duration(attempt) * 35 * time.Millisecond):
			}
		}
		if err = v.ready(ctx); errors.Is(err, ErrAway) {
			break
		}
		if err == nil {
			if err = v.failed(ctx, bump.Run(ctx, v.rdb, keys, v.now().UnixMicro(), len(scopes)).Err()); err == nil {
				return nil
			}
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
	if err := v.ready(ctx); err != nil {
		return fmt.Errorf("ensure change versions %v: %w", scopes, err)
	}
	start := v.now().UnixMicro()
	pipe := v.rdb.Pipeline()
	for _, s := range append(scopes, epochScope) {
		pipe.SetNX(ctx, v.key(s), start, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ensure change versions %v: %w", scopes, v.failed(ctx, err))
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

// Read appends the scopes' versions, then the epoch's, to dst in one round
// trip. A missing counter is ErrMissing: the caller must not cache or name
// an answer then; so is an error (ErrAway while Redis is away).
func (v *Versions) Read(ctx context.Context, dst []uint64, scopes ...string) ([]uint64, error) {
	if v == nil {
		return dst, ErrMissing
	}
	if err := v.ready(ctx); err != nil {
		return dst, fmt.Errorf("read change versions: %w", err)
	}
	var keys [5]string
	ks := keys[:0]
	for _, s := range scopes {
		ks = append(ks, v.key(s))
	}
	ks = append(ks, v.key(epochScope))
	vals, err := v.rdb.MGet(ctx, ks...).Result()
	if err != nil {
		return dst, fmt.Errorf("read change versions: %w", v.failed(ctx, err))
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
