package changes_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
)

// cut is a TCP relay to Redis that can be cut (every connection closed, the
// port refused) and joined again on the same address.
type cut struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func newCut(t *testing.T, target string) *cut {
	c := &cut{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	c.serve(ln)
	t.Cleanup(c.down)
	return c
}

func (c *cut) serve(ln net.Listener) {
	c.mu.Lock()
	c.ln = ln
	c.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", c.target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

func (c *cut) down() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for _, x := range c.conns {
		x.Close()
	}
	c.conns = nil
}

func (c *cut) up(t *testing.T) {
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.serve(ln)
}

// After Redis was away, the process's first command moves the epoch before
// any version is trusted: a name or memo from before the outage never
// matches again, though the scopes' own counters did not move (a write
// meanwhile could not bump them).
func TestEpochMovesAfterAnOutage(t *testing.T) {
	u, err := url.Parse(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	c := newCut(t, u.Host)
	rdb, err := redisx.Open("redis://" + c.addr + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	// A prefix of its own: moving the epoch of "test:" would move other
	// packages' tests' names under their feet.
	v := changes.New(rdb, scope("away-prefix")+":")
	ctx := context.Background()
	a := scope("away")
	if err := v.Ensure(ctx, a); err != nil {
		t.Fatal(err)
	}
	before, err := v.Read(ctx, nil, a)
	if err != nil || len(before) != 2 {
		t.Fatalf("read: %v %v", before, err)
	}
	c.down()
	if _, err := v.Coalesced().Read(ctx, nil, a); err == nil {
		t.Fatal("read through a cut connection succeeded")
	}
	if !v.Away() {
		t.Fatal("not away after a failed read")
	}
	c.up(t)
	var after []uint64
	deadline := time.Now().Add(5 * time.Second)
	for {
		if after, err = v.Coalesced().Read(ctx, nil, a); err == nil || time.Now().After(deadline) {
			break
		}
		if !errors.Is(err, changes.ErrAway) {
			t.Logf("read after the cut: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("read after Redis returned: %v", err)
	}
	if v.Away() || v.Recoveries() != 1 {
		t.Fatalf("away %v, recoveries %d after Redis returned", v.Away(), v.Recoveries())
	}
	if after[0] != before[0] || after[1] == before[1] {
		t.Fatalf("versions %v before the outage, %v after: want the scope's unchanged and the epoch moved", before, after)
	}
}
