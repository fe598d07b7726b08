package changes_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/redisx/redistest"
)

func open(t *testing.T, url string) *changes.Versions {
	t.Helper()
	rdb, err := redisx.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis at %s: %v", url, err)
	}
	return changes.New(rdb, "test:")
}

func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// scope is unique per test run, so tests sharing one Redis do not count
// each other's bumps.
func scope(name string) string { return fmt.Sprintf("test:%s:%d", name, rand.Uint64()) }

func TestVersions(t *testing.T) {
	t.Run("single", func(t *testing.T) { testVersions(t, open(t, redisURL())) })
	// Several scopes in one MGET and one script: on a cluster that works only
	// because every key has the same hash tag (else CROSSSLOT).
	t.Run("cluster", func(t *testing.T) { testVersions(t, open(t, redistest.Cluster(t, 3))) })
}

func testVersions(t *testing.T, v *changes.Versions) {
	ctx := context.Background()
	a, b := scope("a"), scope("b")

	if _, err := v.Read(ctx, nil, a); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("read before any writer: %v, want ErrMissing (a reader never makes a version up)", err)
	}
	if err := v.Ensure(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Read(ctx, nil, a, b); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("read with b missing: %v, want ErrMissing", err)
	}
	if err := v.Bump(ctx, b); err != nil { // starts b
		t.Fatal(err)
	}
	first, err := v.Read(ctx, nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if first[0] < 1e15 || first[1] < 1e15 {
		t.Fatalf("new counters %v: want them started at the time in microseconds", first)
	}
	if err := v.Ensure(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	if again, _ := v.Read(ctx, nil, a, b); again[0] != first[0] || again[1] != first[1] {
		t.Fatalf("Ensure moved existing counters: %v then %v", first, again)
	}

	// Concurrent writers: every bump counts, none is lost.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if err := v.Bump(ctx, a, b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	after, err := v.Read(ctx, nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if after[0] != first[0]+200 || after[1] != first[1]+200 {
		t.Fatalf("after 200 bumps: %v, want %v + 200", after, first)
	}
}

func TestNilVersions(t *testing.T) {
	var v *changes.Versions
	if err := v.Bump(context.Background(), "jobs"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Read(context.Background(), nil, "jobs"); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("nil Versions read: %v, want ErrMissing", err)
	}
	if _, _, _, err := v.Coalesced().ReadEntry(context.Background(), nil, "x", "jobs"); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("nil Versions ReadEntry: %v, want ErrMissing", err)
	}
	if _, _, err := v.ReadEntry(context.Background(), "x"); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("nil Versions entry: %v, want ErrMissing", err)
	}
	if err := v.WriteEntries(context.Background(), []changes.Entry{{ID: "x"}}); err != nil {
		t.Fatal(err)
	}
}

func TestBumpFailsWhenRedisIsDown(t *testing.T) {
	rdb, err := redisx.Open("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	v := changes.New(rdb, "test:")
	if err := v.Bump(context.Background(), "jobs"); err == nil {
		t.Fatal("bump against no Redis succeeded; the writer would acknowledge a write readers may not see")
	}
	if !v.Away() {
		t.Fatal("Away() false after a failed bump")
	}
	// Away: the next commands fail at once, without a timeout each.
	start := time.Now()
	for range 100 {
		if err := v.Bump(context.Background(), "jobs"); !errors.Is(err, changes.ErrAway) {
			t.Fatalf("bump while away: %v, want ErrAway", err)
		}
		if _, err := v.Read(context.Background(), nil, "jobs"); !errors.Is(err, changes.ErrAway) {
			t.Fatalf("read while away: %v, want ErrAway", err)
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("200 commands while away took %s", d)
	}
}

// Coalesced reads see every bump acknowledged before they began, while
// many concurrent reads share MGETs.
func TestCoalescedReads(t *testing.T) {
	ctx := context.Background()
	v := open(t, redisURL())
	c := v.Coalesced()
	a, b := scope("ca"), scope("cb")
	if err := v.Ensure(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	var bg sync.WaitGroup
	for range 16 { // keep batches busy
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Read(ctx, nil, b, a); err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
			}
		})
	}
	for range 300 {
		if err := v.Bump(ctx, a); err != nil {
			t.Fatal(err)
		}
		want, err := v.Read(ctx, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Read(ctx, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] < want[0] {
			t.Fatalf("a coalesced read begun after a bump to %d saw %d", want[0], got[0])
		}
	}
	close(stop)
	bg.Wait()
	if n, mgets := c.Counts(); mgets >= n || n != reads.Load()+300 {
		t.Fatalf("%d coalesced reads (%d made) took %d MGETs: none were shared", n, reads.Load()+300, mgets)
	} else {
		t.Logf("%d coalesced reads in %d MGETs", n, mgets)
	}
	if _, err := c.Read(ctx, nil, scope("never")); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("missing scope: %v", err)
	}
}

// An entry is read with the versions in one batch, whoever else is in it;
// an absent one is not found, and the versions still come.
func TestEntries(t *testing.T) {
	ctx := context.Background()
	v := open(t, redisURL())
	c := v.Coalesced()
	a := scope("ea")
	if err := v.Ensure(ctx, a); err != nil {
		t.Fatal(err)
	}
	want, err := v.Read(ctx, nil, a)
	if err != nil {
		t.Fatal(err)
	}
	id, other := scope("entry"), scope("absent")
	if err := v.WriteEntries(ctx, []changes.Entry{{ID: id, Value: []byte("answer\x00bytes"), TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			ask := id
			if i%2 == 1 {
				ask = other
			}
			vs, e, found, err := c.ReadEntry(ctx, nil, ask, a)
			switch {
			case err != nil:
				t.Error(err)
			case len(vs) != 2 || vs[0] != want[0] || vs[1] != want[1]: // the scope's, the epoch's
				t.Errorf("versions %v, want %v", vs, want)
			case ask == id && (!found || e != "answer\x00bytes"):
				t.Errorf("entry: %q found %v", e, found)
			case ask == other && (found || e != ""):
				t.Errorf("absent entry: %q found %v", e, found)
			}
		})
	}
	wg.Wait()
	if e, found, err := v.ReadEntry(ctx, id); err != nil || !found || e != "answer\x00bytes" {
		t.Fatalf("ReadEntry: %q %v %v", e, found, err)
	}
	if _, found, err := v.ReadEntry(ctx, other); err != nil || found {
		t.Fatalf("ReadEntry of an absent entry: found %v, %v", found, err)
	}
	rdb, err := redisx.Open(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	ttl, err := rdb.TTL(ctx, v.EntryKey(id)).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("entry TTL %v, %v", ttl, err)
	}
}
