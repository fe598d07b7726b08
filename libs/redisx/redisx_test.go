package redisx_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/redisx/redistest"
)

// A URL names one server unless it carries addr parameters or cluster=true.
func TestOpenChoosesTheClientFromTheURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster bool
	}{
		{"redis://127.0.0.1:6379/0", false},
		{"redis://127.0.0.1:6379/2?cluster=false", false},
		{"redis://10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379", true},
		{"rediss://user:pw@redis-cluster:6379/0?cluster=true", true},
	} {
		c, err := redisx.Open(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		var dial, read time.Duration
		var dialerRetries int
		switch c := c.(type) {
		case *redis.Client:
			dial, read, dialerRetries = c.Options().DialTimeout, c.Options().ReadTimeout, c.Options().DialerRetries
		case *redis.ClusterClient:
			dial, read, dialerRetries = c.Options().DialTimeout, c.Options().ReadTimeout, c.Options().DialerRetries
		}
		if _, isCluster := c.(*redis.ClusterClient); isCluster != tc.cluster {
			t.Errorf("%s: cluster client %v, want %v", tc.url, isCluster, tc.cluster)
		}
		if dial != 250*time.Millisecond || read != 250*time.Millisecond || dialerRetries != 1 {
			t.Errorf("%s: dial %v, read %v, %d dial attempts; want 250ms, 250ms, 1", tc.url, dial, read, dialerRetries)
		}
		_ = c.Close()
	}
	for _, bad := range []string{"redis://h:6379/1?addr=h2:6379", "redis://h:6379?cluster=maybe", "redis://h:6379?addr=nohostport"} {
		if c, err := redisx.Open(bad); err == nil {
			_ = c.Close()
			t.Errorf("%s: opened", bad)
		}
	}
}

// On a three-master cluster the client routes each key to the master that
// serves its slot: keys spread over every master and all read back.
func TestClusterClientWorksAcrossSlots(t *testing.T) {
	url := redistest.Cluster(t, 3)
	rdb, err := redisx.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	const n = 200
	for i := range n {
		if err := rdb.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatalf("set k%d: %v", i, err)
		}
	}
	for i := range n {
		if v, err := rdb.Get(ctx, "k"+strconv.Itoa(i)).Int(); err != nil || v != i {
			t.Fatalf("get k%d: %d, %v", i, v, err)
		}
	}
	var masters, total atomic.Int64
	err = rdb.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		size, err := c.DBSize(ctx).Result()
		if size > 0 {
			masters.Add(1)
		}
		total.Add(size)
		return err
	})
	if err != nil || masters.Load() != 3 || total.Load() != n {
		t.Fatalf("%d keys on %d masters (%v), want %d on 3", total.Load(), masters.Load(), err, n)
	}
	if err := redisx.Check(rdb)(ctx); err != nil {
		t.Fatalf("readiness on the cluster: %v", err)
	}
}
