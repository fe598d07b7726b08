// Package ratelimit is the gateway's sliding-window limiter. The window lives
// in Redis (one sorted set per bucket, updated by one Lua script, timed by the
// Redis clock; one server or a Redis Cluster) so that every gateway replica
// spends the same budget. When Redis does not answer, each instance falls
// back to the same algorithm in memory, so writes stay limited per instance,
// and health reports it.
//
// The bound while Redis is away: each replica admits at most a budget's
// limit in any window, counting what it admitted through Redis in that
// window too (recorded as it goes, one entry per lease). A client that
// spreads its requests over N replicas gets at most N × its limit in any
// window, the one in which Redis goes away included; while Redis answers, its
// limit (plus at most one lease).
package ratelimit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sources of a decision.
const (
	SourceRedis = "redis"
	SourceLocal = "local"
)

// Decision is the outcome of one check.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	// ResetAfter is the time until the oldest counted request leaves the window
	// (when denied: until a slot frees).
	ResetAfter time.Duration
	Source     string
}

// RetryAfterSeconds rounds ResetAfter up to whole seconds, at least 1.
func (d Decision) RetryAfterSeconds() int {
	s := int((d.ResetAfter + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// script: drop entries older than the window, count, admit up to ARGV[4]
// units if under the limit (one entry each; all of them or none when ARGV[5]
// is 1), and return the units granted,
// the count, and the time until the oldest entry leaves. TIME makes every
// replica share Redis's clock instead of their own. It touches KEYS[1] only,
// so on a Redis Cluster each run stays in one slot; a second key would need
// a hash tag ({bucket}) shared with the first, or the run fails with
// CROSSSLOT (TestOnARedisCluster catches that).
var script = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local want = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local granted = math.min(want, limit - count)
if granted < 0 or (ARGV[5] == '1' and granted < want) then granted = 0 end
for i = 1, granted do
  redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. i)
end
count = count + granted
redis.call('PEXPIRE', KEYS[1], window)
local reset = 0
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if oldest[2] then reset = tonumber(oldest[2]) + window - now end
return {granted, count, reset}
`)

// Limiter checks budgets.
type Limiter struct {
	rdb      redis.UniversalClient
	prefix   string
	window   time.Duration
	instance string
	seq      atomic.Uint64
	log      *slog.Logger

	// redisDownUntil (unix nanos) skips Redis for a moment after a failure so
	// that an outage costs one timeout per second, not one per request.
	redisDownUntil atomic.Int64
	local          *local

	leaseMu  sync.Mutex
	leases   map[string]*lease
	leaseSwp time.Time
}

// lease is budget taken from Redis ahead of use by AllowLeased. Its units
// were counted in Redis when taken, so they stay valid exactly as long as
// their entries stay in the window.
type lease struct {
	units     int       // left to spend
	remaining int       // the budget Redis had left after granting them
	until     time.Time // when their entries leave the window
	resetAt   time.Time // when the oldest entry of the bucket leaves it
	// refill is set while one request takes the next lease from Redis; the
	// bucket's other requests wait for it instead of each taking a lease of
	// their own, a round trip each and the others' leases wasted (see
	// BenchmarkAllowLeasedOneKeyParallel).
	refill *refill
}

// refill is one round trip for a bucket's next lease, shared by the requests
// that arrive while it is under way.
type refill struct {
	done    chan struct{} // closed when d, granted and ok are set
	d       Decision
	granted int
	ok      bool // Redis answered
}

// New returns a limiter over rdb (nil: local only) with keys under prefix.
func New(rdb redis.UniversalClient, prefix string, window time.Duration, log *slog.Logger) *Limiter {
	host := strconv.FormatInt(time.Now().UnixNano(), 36)
	return &Limiter{rdb: rdb, prefix: prefix, window: window, instance: host, log: log, local: newLocal(window),
		leases: map[string]*lease{}}
}

// Window is the sliding window length.
func (l *Limiter) Window() time.Duration { return l.window }

// RedisAvailable reports whether the last attempt reached Redis.
func (l *Limiter) RedisAvailable() bool {
	return l.rdb != nil && time.Now().UnixNano() >= l.redisDownUntil.Load()
}

// Allow spends one unit of bucket's budget of limit per window, if any is left.
func (l *Limiter) Allow(ctx context.Context, bucket string, limit int) Decision {
	d, granted, ok := l.take(ctx, bucket, limit, 1)
	if ok {
		l.local.record(bucket, granted, time.Now())
		return d
	}
	return l.local.allow(bucket, limit, time.Now())
}

// AllowN spends n units of bucket's budget at once, all of them or none (a
// batch of writes counted by its rows), from Redis, or in memory while Redis
// is away. n of 1 is Allow.
func (l *Limiter) AllowN(ctx context.Context, bucket string, limit, n int) Decision {
	if n <= 1 {
		return l.Allow(ctx, bucket, limit)
	}
	d, granted, ok := l.takeAll(ctx, bucket, limit, n)
	if ok {
		l.local.record(bucket, granted, time.Now())
		return d
	}
	return l.local.allowN(bucket, limit, n, time.Now())
}

// take asks Redis for up to n units; ok is false when Redis did not answer.
func (l *Limiter) take(ctx context.Context, bucket string, limit, n int) (Decision, int, bool) {
	return l.takeUnits(ctx, bucket, limit, n, false)
}

// takeAll is take of n units or none.
func (l *Limiter) takeAll(ctx context.Context, bucket string, limit, n int) (Decision, int, bool) {
	return l.takeUnits(ctx, bucket, limit, n, true)
}

func (l *Limiter) takeUnits(ctx context.Context, bucket string, limit, n int, all bool) (Decision, int, bool) {
	if l.rdb == nil || time.Now().UnixNano() < l.redisDownUntil.Load() {
		return Decision{}, 0, false
	}
	member := l.instance + ":" + strconv.FormatUint(l.seq.Add(1), 36)
	whole := 0
	if all {
		whole = 1
	}
	res, err := script.Run(ctx, l.rdb, []string{l.prefix + bucket}, l.window.Milliseconds(), limit, member, n, whole).Int64Slice()
	if err == nil && len(res) == 3 {
		return Decision{
			Allowed: res[0] > 0, Limit: limit, Remaining: max(limit-int(res[1]), 0),
			ResetAfter: time.Duration(res[2]) * time.Millisecond, Source: SourceRedis,
		}, int(res[0]), true
	}
	if ctx.Err() == nil {
		l.redisDownUntil.Store(time.Now().Add(time.Second).UnixNano())
		l.log.Warn("rate limiter: redis unavailable, limiting per instance", "error", err)
	}
	return Decision{}, 0, false
}

// LeaseSize is how many units AllowLeased takes from Redis at once for a
// budget of limit: a hundredth of it, at least 1 (so small budgets are
// counted one by one, exactly) and at most 64.
func LeaseSize(limit int) int { return min(max(limit/100, 1), 64) }

// AllowLeased is Allow for budgets where an instance may hold a little of
// the budget ahead of use: it takes LeaseSize(limit) units from Redis at once
// and spends them locally, so most requests cost no round trip. The units are
// counted in Redis when taken, so all replicas together still never exceed
// the limit within the window; one instance's unspent units are simply not
// available to the others until they leave it. Remaining is exact for a
// client that talks to one instance. Leasing makes the window a little
// coarser, not looser: a unit counts from when it was leased, so over any
// window a client can get at most one lease (LeaseSize) more than the limit,
// and budgets whose lease would be one unit are counted one by one, exactly.
func (l *Limiter) AllowLeased(ctx context.Context, bucket string, limit int) Decision {
	size := LeaseSize(limit)
	if size == 1 {
		return l.Allow(ctx, bucket, limit)
	}
	for {
		now := time.Now()
		l.leaseMu.Lock()
		if now.Sub(l.leaseSwp) > l.window {
			// Forget expired leases so memory follows active clients only.
			for k, ls := range l.leases {
				if ls.refill == nil && !now.Before(ls.until) {
					delete(l.leases, k)
				}
			}
			l.leaseSwp = now
		}
		ls := l.leases[bucket]
		if ls != nil && ls.units > 0 && now.Before(ls.until) {
			ls.units--
			d := Decision{Allowed: true, Limit: limit, Remaining: ls.remaining + ls.units,
				ResetAfter: max(ls.resetAt.Sub(now), 0), Source: SourceRedis}
			l.leaseMu.Unlock()
			return d
		}
		if ls != nil && ls.refill != nil {
			// Another request is taking the next lease: wait for it.
			r := ls.refill
			l.leaseMu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return l.local.allow(bucket, limit, now)
			}
			switch {
			case !r.ok:
				return l.local.allow(bucket, limit, time.Now())
			case r.granted == 0:
				return r.d // the budget was spent when it was asked
			}
			continue // spend from the new lease, or take the next one
		}
		if ls == nil {
			ls = &lease{}
			l.leases[bucket] = ls
		}
		r := &refill{done: make(chan struct{})}
		ls.refill = r
		l.leaseMu.Unlock()

		r.d, r.granted, r.ok = l.take(ctx, bucket, limit, size)
		l.leaseMu.Lock()
		ls.refill = nil
		if r.granted > 0 {
			l.local.record(bucket, r.granted, now)
			ls.units, ls.remaining = r.granted-1, r.d.Remaining
			ls.until, ls.resetAt = now.Add(l.window), now.Add(r.d.ResetAfter)
			r.d.Remaining += r.granted - 1
		}
		l.leaseMu.Unlock()
		close(r.done)
		if !r.ok {
			return l.local.allow(bucket, limit, now)
		}
		return r.d
	}
}

// local is the in-memory sliding log used while Redis is away; while Redis
// answers it records what this replica admitted through it (record), so that
// those units still count here when Redis goes away.
type local struct {
	window time.Duration
	mu     sync.Mutex
	logs   map[string][]slot
	sweep  time.Time
}

// slot is n units admitted at about at: units admitted within grain of the
// slot before join it, and it takes the later time (they leave the window a
// little late, never early), so a bucket's log has about window/grain slots
// however large its budget.
type slot struct {
	at time.Time
	n  int
}

// grainOf is the slots' width for a window.
func grainOf(window time.Duration) time.Duration { return window / 32 }

func newLocal(window time.Duration) *local {
	return &local{window: window, logs: map[string][]slot{}}
}

// log returns bucket's slots still in the window and their units, after
// forgetting idle buckets once a window; under l.mu.
func (l *local) log(bucket string, now time.Time) ([]slot, int) {
	if now.Sub(l.sweep) > l.window {
		// Forget idle buckets so memory follows active clients only.
		for k, ts := range l.logs {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1].at) >= l.window {
				delete(l.logs, k)
			}
		}
		l.sweep = now
	}
	ts := l.logs[bucket]
	cut := 0
	for cut < len(ts) && now.Sub(ts[cut].at) >= l.window {
		cut++
	}
	ts = ts[cut:]
	units := 0
	for _, s := range ts {
		units += s.n
	}
	return ts, units
}

// add appends n units at now to ts, joining the last slot when it is recent.
func (l *local) add(ts []slot, n int, now time.Time) []slot {
	if k := len(ts) - 1; k >= 0 && now.Sub(ts[k].at) < grainOf(l.window) {
		ts[k].n += n
		if now.After(ts[k].at) {
			ts[k].at = now
		}
		return ts
	}
	return append(ts, slot{at: now, n: n})
}

// record counts n units this replica admitted through Redis.
func (l *local) record(bucket string, n int, now time.Time) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	ts, _ := l.log(bucket, now)
	l.logs[bucket] = l.add(ts, n, now)
	l.mu.Unlock()
}

func (l *local) allow(bucket string, limit int, now time.Time) Decision {
	return l.allowN(bucket, limit, 1, now)
}

// allowN admits n units or none.
func (l *local) allowN(bucket string, limit, n int, now time.Time) Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts, units := l.log(bucket, now)
	d := Decision{Limit: limit, Source: SourceLocal}
	if units+n <= limit {
		ts = l.add(ts, n, now)
		units += n
		d.Allowed = true
	}
	l.logs[bucket] = ts
	d.Remaining = max(limit-units, 0)
	if len(ts) > 0 {
		d.ResetAfter = ts[0].at.Add(l.window).Sub(now)
	}
	return d
}
