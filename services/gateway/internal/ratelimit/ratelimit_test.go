package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/redisx/redistest"
)

// testRedis is the real local Redis (TEST_REDIS_URL wins) and a key prefix
// of the caller's own, whose keys are deleted afterwards.
func testRedis(tb testing.TB) (redis.UniversalClient, string) {
	tb.Helper()
	url := os.Getenv("TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	rdb, err := redisx.Open(url)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("redis at %s: %v", url, err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	prefix := "test:rl:" + hex.EncodeToString(r[:]) + ":"
	tb.Cleanup(func() {
		del := func(ctx context.Context, node redis.Cmdable) error {
			// One key at a time: on a cluster they live in different slots.
			for it := node.Scan(ctx, 0, prefix+"*", 100).Iterator(); it.Next(ctx); {
				_ = rdb.Del(ctx, it.Val()).Err()
			}
			return nil
		}
		if c, ok := rdb.(*redis.ClusterClient); ok {
			_ = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return del(ctx, node) })
		} else {
			_ = del(ctx, rdb)
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Leased units are counted in Redis when they are taken: two instances
// spending one budget in turns never admit more than the limit together, and
// forgo at most the units each still holds.
func TestLeasedReadsStayWithinTheSharedBudget(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := New(rdb, prefix, time.Minute, quiet()), New(rdb, prefix, time.Minute, quiet())
	const limit = 300 // leases of 3
	ctx := context.Background()
	allowed := 0
	for i := range 1000 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if d := l.AllowLeased(ctx, "key:9:read", limit); d.Allowed {
			allowed++
		}
	}
	if held := 2 * (LeaseSize(limit) - 1); allowed > limit || allowed < limit-held {
		t.Fatalf("%d reads admitted for a budget of %d shared by two instances (at most %d may be held unspent)", allowed, limit, held)
	}
}

// On one instance a lease is invisible to the client: Remaining counts down
// one by one, while Redis is asked once per lease.
func TestLeasedRemainingIsExactOnOneInstance(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := New(rdb, prefix, time.Minute, quiet())
	const limit = 1000 // leases of 10
	ctx := context.Background()
	for i := 1; i <= 25; i++ {
		d := l.AllowLeased(ctx, "key:7:read", limit)
		if !d.Allowed || d.Remaining != limit-i || d.Source != SourceRedis {
			t.Fatalf("read %d: %+v, want remaining %d", i, d, limit-i)
		}
	}
	if n, err := rdb.ZCard(ctx, prefix+"key:7:read").Result(); err != nil || n != 30 {
		t.Fatalf("redis holds %d units (%v), want 3 leases of 10", n, err)
	}
}

// Concurrent requests of one bucket share one refill: while a request takes
// the next lease the others wait for it, so Redis counts no more units than
// were spent plus one lease, and the whole budget is admitted. (When each
// took a lease of its own and the newest replaced the rest, every client
// made a round trip and the other leases were thrown away.)
func TestConcurrentLeasedRequestsShareOneRefill(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := New(rdb, prefix, time.Minute, quiet())
	const limit, workers, each = 6400, 32, 200 // leases of 64; workers × each = limit
	ctx := context.Background()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if d := l.AllowLeased(ctx, "key:11:read", limit); d.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	n, err := rdb.ZCard(ctx, prefix+"key:11:read").Result()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Load() != limit || n != limit {
		t.Fatalf("admitted %d of a budget of %d spent by %d clients; redis counted %d units", allowed.Load(), limit, workers, n)
	}
	// The next request finds the budget spent.
	if d := l.AllowLeased(ctx, "key:11:read", limit); d.Allowed || d.Remaining != 0 {
		t.Fatalf("request past the budget: %+v", d)
	}
}

// A small budget is leased one unit at a time, so it is exact: the read past
// it is refused with the time until a unit frees.
func TestSmallBudgetsAreCountedOneByOne(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := New(rdb, prefix, time.Minute, quiet())
	ctx := context.Background()
	for i := range 50 {
		if d := l.AllowLeased(ctx, "ip:203.0.113.9:read", 50); !d.Allowed {
			t.Fatalf("read %d of 50 refused: %+v", i+1, d)
		}
	}
	d := l.AllowLeased(ctx, "ip:203.0.113.9:read", 50)
	if d.Allowed || d.Remaining != 0 || d.RetryAfterSeconds() < 1 {
		t.Fatalf("read 51 of 50: %+v", d)
	}
}

// On a Redis Cluster (REDIS_URL with addr parameters) the limiter behaves as
// on one server: the tests above pass against a local three-master cluster,
// and a budget shared by two instances admits exactly its limit. Every script
// run must succeed: a CROSSSLOT or MOVED error would send the limiter to its
// per-instance fallback, which logs and answers with SourceLocal.
func TestOnARedisCluster(t *testing.T) {
	t.Setenv("TEST_REDIS_URL", redistest.Cluster(t, 3))
	t.Run("LeasedReadsStayWithinTheSharedBudget", TestLeasedReadsStayWithinTheSharedBudget)
	t.Run("LeasedRemainingIsExactOnOneInstance", TestLeasedRemainingIsExactOnOneInstance)
	t.Run("ConcurrentLeasedRequestsShareOneRefill", TestConcurrentLeasedRequestsShareOneRefill)
	t.Run("SmallBudgetsAreCountedOneByOne", TestSmallBudgetsAreCountedOneByOne)
	t.Run("SharedBudgetIsExact", func(t *testing.T) {
		rdb, prefix := testRedis(t)
		var logs strings.Builder // one goroutine: no lock needed
		log := slog.New(slog.NewTextHandler(&logs, nil))
		a, b := New(rdb, prefix, time.Minute, log), New(rdb, prefix, time.Minute, log)
		ctx := context.Background()
		// Buckets of many slots, so that the scripts run on every master.
		for bucket := range 30 {
			key := "key:" + strconv.Itoa(bucket) + ":write"
			allowed := 0
			for i := range 150 {
				l := a
				if i%2 == 1 {
					l = b
				}
				d := l.Allow(ctx, key, 120)
				if d.Source != SourceRedis {
					t.Fatalf("%s, request %d: decided %s:\n%s", key, i+1, d.Source, logs.String())
				}
				if d.Allowed {
					allowed++
				}
			}
			if allowed != 120 {
				t.Fatalf("%s: %d of 150 writes admitted by two instances for a budget of 120", key, allowed)
			}
		}
		if logs.String() != "" {
			t.Fatalf("limiter logged on the cluster:\n%s", logs.String())
		}
	})
}

// When Redis goes away mid-window each replica limits alone, counting what
// it admitted through Redis in the window: a client spread over two replicas
// gets at most twice its limit in that window, never its limit more per
// replica on top of what it already had.
func TestRedisAwayBoundIsTheLimitPerReplica(t *testing.T) {
	rdb, prefix := testRedis(t)
	a, b := New(rdb, prefix, time.Minute, quiet()), New(rdb, prefix, time.Minute, quiet())
	ctx := context.Background()
	for _, c := range []struct {
		bucket string
		limit  int
		allow  func(l *Limiter, bucket string, limit int) Decision
	}{
		{"key:1:write", 5, func(l *Limiter, bucket string, limit int) Decision { return l.Allow(ctx, bucket, limit) }},
		{"key:1:read", 1000, func(l *Limiter, bucket string, limit int) Decision { return l.AllowLeased(ctx, bucket, limit) }},
	} {
		admitted := 0
		// Through Redis: 3 on a, 1 on b (a 1000 budget leases 10 at a time).
		for i, l := range []*Limiter{a, a, a, b} {
			if d := c.allow(l, c.bucket, c.limit); !d.Allowed || d.Source != SourceRedis {
				t.Fatalf("%s: request %d through Redis: %+v", c.bucket, i, d)
			}
			admitted++
		}
		// Redis away on both (as after a failed call).
		for _, l := range []*Limiter{a, b} {
			l.redisDownUntil.Store(time.Now().Add(time.Hour).UnixNano())
		}
		for _, l := range []*Limiter{a, b} {
			for range 2 * c.limit {
				if c.allow(l, c.bucket, c.limit).Allowed {
					admitted++
				}
			}
		}
		if admitted > 2*c.limit {
			t.Fatalf("%s: %d admitted in one window by two replicas, want at most %d", c.bucket, admitted, 2*c.limit)
		}
		if admitted < 2*c.limit-2*LeaseSize(c.limit) {
			t.Fatalf("%s: only %d admitted: the replicas forgot budget", c.bucket, admitted)
		}
		for _, l := range []*Limiter{a, b} {
			l.redisDownUntil.Store(0)
		}
	}
}

// A batch's units are taken all at once or none, from Redis and in memory:
// one that does not fit leaves the budget as it was.
func TestAllowNIsAllOrNothing(t *testing.T) {
	rdb, prefix := testRedis(t)
	ctx := context.Background()
	for name, l := range map[string]*Limiter{"redis": New(rdb, prefix, time.Minute, quiet()), "local": New(nil, prefix, time.Minute, quiet())} {
		t.Run(name, func(t *testing.T) {
			if d := l.AllowN(ctx, "key:1:write", 12, 10); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("10 of 12: %+v", d)
			}
			if d := l.AllowN(ctx, "key:1:write", 12, 3); d.Allowed || d.Remaining != 2 {
				t.Fatalf("3 more of 12: %+v", d)
			}
			if d := l.AllowN(ctx, "key:1:write", 12, 2); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("2 more of 12: %+v", d)
			}
			if d := l.Allow(ctx, "key:1:write", 12); d.Allowed {
				t.Fatalf("13th unit: %+v", d)
			}
		})
	}
}
