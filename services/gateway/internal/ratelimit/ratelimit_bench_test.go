package ratelimit

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// benchLimiter is a limiter over the real local Redis under a prefix of its own.
func benchLimiter(b *testing.B) *Limiter {
	rdb, prefix := testRedis(b)
	return New(rdb, prefix, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// BenchmarkAllowRedis is one write's check: the Lua script round trip on a
// bucket that admits everything (a key with a large budget).
func BenchmarkAllowRedis(b *testing.B) {
	l := benchLimiter(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d := l.Allow(ctx, "key:1:write", 1<<30)
		if !d.Allowed || d.Source != SourceRedis {
			b.Fatalf("decision %+v", d)
		}
	}
}

// BenchmarkAllowRedisDenied is a bucket over its budget: the script trims and
// counts but adds nothing, so the set stays small.
func BenchmarkAllowRedisDenied(b *testing.B) {
	l := benchLimiter(b)
	ctx := context.Background()
	for range 10 {
		l.Allow(ctx, "key:2:write", 10)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := l.Allow(ctx, "key:2:write", 10); d.Allowed || d.Source != SourceRedis {
			b.Fatalf("decision %+v", d)
		}
	}
}

// BenchmarkAllowRedisParallel is many clients of one gateway at once, each
// with its own key, sharing the connection pool.
func BenchmarkAllowRedisParallel(b *testing.B) {
	l := benchLimiter(b)
	ctx := context.Background()
	b.ReportAllocs()
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		bucket := "key:" + strconv.FormatInt(n.Add(1), 10) + ":write"
		for pb.Next() {
			if d := l.Allow(ctx, bucket, 1<<30); !d.Allowed {
				b.Fatalf("decision %+v", d)
			}
		}
	})
}

// BenchmarkAllowLeased is a read with a large budget: one Redis round trip
// per LeaseSize = 64 requests.
func BenchmarkAllowLeased(b *testing.B) {
	l := benchLimiter(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := l.AllowLeased(ctx, "key:1:read", 1<<30); !d.Allowed {
			b.Fatalf("decision %+v", d)
		}
	}
}

// BenchmarkAllowLeasedOneKeyParallel is many clients of one key at once (an
// importer's 32 connections): they share one refill, so a round trip is still
// made once per 64 requests, not once per client whenever a lease runs out.
func BenchmarkAllowLeasedOneKeyParallel(b *testing.B) {
	l := benchLimiter(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(16) // sixteen clients per GOMAXPROCS
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d := l.AllowLeased(ctx, "key:3:read", 1<<30); !d.Allowed {
				b.Fatalf("decision %+v", d)
			}
		}
	})
}

// BenchmarkAllowLocal is the per-instance fallback used while Redis is away,
// at a steady state of 100 entries per window.
func BenchmarkAllowLocal(b *testing.B) {
	l := New(nil, "", time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	for range 100 {
		l.Allow(ctx, "key:1:write", 100)
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := l.Allow(ctx, "key:1:write", 100); d.Source != SourceLocal || d.Allowed {
			b.Fatalf("decision %+v", d)
		}
	}
}
