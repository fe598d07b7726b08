// Package redisx opens the Redis client with timeouts short enough that a
// Redis outage degrades a request instead of stalling it.
package redisx

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Open parses rawURL and returns a client. It does not fail when Redis is
// down: callers decide what degraded service looks like.
//
// redis://host:port/db (rediss:// for TLS) names one server. A URL with addr
// parameters names a Redis Cluster through seed nodes, in go-redis's own
// cluster form (redis://host1:port?addr=host2:port&addr=host3:port); cluster=true
// does so for a single seed address (one service in front of every node).
// A cluster has database 0 only.
func Open(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	q := u.Query()
	cluster := q.Has("addr")
	if q.Has("cluster") {
		flag, err := strconv.ParseBool(q.Get("cluster"))
		if err != nil {
			return nil, fmt.Errorf("parse redis url: cluster=%q: %w", q.Get("cluster"), err)
		}
		cluster = cluster || flag
		q.Del("cluster") // ours, not go-redis's: its parsers refuse unknown options
	}
	// Set through the URL so that both of go-redis's parsers apply them.
	for k, v := range map[string]string{"dial_timeout": "250ms", "read_timeout": "250ms", "write_timeout": "250ms",
		"max_retries": "0", "pool_timeout": "500ms"} {
		q.Set(k, v)
	}
	// RESP2 unless the URL asks for another: nothing here uses RESP3's push
	// notifications, and go-redis looks for pending ones around every
	// command under RESP3 (see the CPU profile of `make bench` row n).
	if !q.Has("protocol") {
		q.Set("protocol", "2")
	}
	u.RawQuery = q.Encode()
	if !cluster {
		opt, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("parse redis url: %w", err)
		}
		opt.DialerRetries = dialerRetries
		return redis.NewClient(opt), nil
	}
	if db := u.Path; db != "" && db != "/" && db != "/0" {
		return nil, fmt.Errorf("parse redis url: a Redis Cluster has database 0 only, not %s", db)
	}
	// max_retries 0 means none for a cluster; MOVED and ASK redirects (a slot
	// moved or failed over) are still followed.
	opt, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("parse redis cluster url: %w", err)
	}
	opt.DialerRetries = dialerRetries
	return redis.NewClusterClient(opt), nil
}

// dialerRetries is one dial attempt per command: retries with backoff would
// turn a Redis outage into a half-second stall on every request that touches it.
const dialerRetries = 1

// The client's own logger prints every failed dial; callers log outages once
// with context instead.
type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(silent{}) }

// Check is a readiness probe for Redis.
func Check(c redis.UniversalClient) func(ctx context.Context) error {
	return func(ctx context.Context) error { return c.Ping(ctx).Err() }
}
