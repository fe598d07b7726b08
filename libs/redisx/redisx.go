// Package redisx opens the Redis client with timeouts short enough that a
// Redis outage degrades a request instead of stalling it.
package redisx

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open parses url (redis://host:port/db) and returns a client. It does not
// fail when Redis is down: callers decide what degraded service looks like.
func Open(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	opt.DialTimeout = 250 * time.Millisecond
	opt.ReadTimeout = 250 * time.Millisecond
	opt.WriteTimeout = 250 * time.Millisecond
	opt.MaxRetries = 0
	opt.PoolTimeout = 500 * time.Millisecond
	// One dial attempt per command: retries with backoff would turn a Redis
	// outage into a half-second stall on every request that touches it.
	opt.DialerRetries = 1
	return redis.NewClient(opt), nil
}

// The client's own logger prints every failed dial; callers log outages once
// with context instead.
type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(silent{}) }

// Check is a readiness probe for Redis.
func Check(c *redis.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }
}
