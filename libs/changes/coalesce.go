package changes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Coalesced reads versions for many concurrent requests with one MGET, as
// a database's group commit writes many commits with one flush: a read
// joins the batch that is still collecting, and a batch's MGET starts only
// after every read in it has joined, so each read still sees every bump
// made before it began (what a reader after an acknowledged write needs).
// Under load the gateway then pays one Redis round trip per batch instead of
// one per request.
type Coalesced struct {
	v    *Versions
	mu   sync.Mutex
	next *batch // collecting: its MGET has not started
	busy bool   // a goroutine is sending batches
	// reads and batches count Read calls and MGETs sent.
	reads, batches atomic.Int64
}

// Counts returns how many reads there have been and in how many MGETs.
func (c *Coalesced) Counts() (reads, batches int64) { return c.reads.Load(), c.batches.Load() }

type batch struct {
	keys  []string
	index map[string]int
	vals  []any
	err   error
	done  chan struct{}
}

// Coalesced returns v's coalescing reader.
func (v *Versions) Coalesced() *Coalesced { return &Coalesced{v: v} }

// Read is Versions.Read through the next batch (the epoch too: see
// Versions.Read).
func (c *Coalesced) Read(ctx context.Context, dst []uint64, scopes ...string) ([]uint64, error) {
	dst, _, _, err := c.read(ctx, dst, "", scopes)
	return dst, err
}

// ReadEntry is Read that also reads the entry id (Versions.EntryKey) in the
// same MGET: a cached answer and the versions that say whether it is
// current cost one round trip. found is false when the entry is absent.
func (c *Coalesced) ReadEntry(ctx context.Context, dst []uint64, id string, scopes ...string) (vs []uint64, entry string, found bool, err error) {
	if c == nil || c.v == nil {
		return dst, "", false, ErrMissing
	}
	return c.read(ctx, dst, c.v.EntryKey(id), scopes)
}

func (c *Coalesced) read(ctx context.Context, dst []uint64, extra string, scopes []string) ([]uint64, string, bool, error) {
	if c == nil || c.v == nil {
		return dst, "", false, ErrMissing
	}
	c.reads.Add(1)
	var at [5]int
	idx := at[:0]
	c.mu.Lock()
	b := c.next
	if b == nil {
		b = &batch{index: make(map[string]int, 4), done: make(chan struct{})}
		c.next = b
	}
	for _, s := range scopes {
		idx = append(idx, b.add(c.v.key(s)))
	}
	idx = append(idx, b.add(c.v.key(epochScope)))
	extraAt := -1
	if extra != "" {
		extraAt = b.add(extra)
	}
	if !c.busy {
		c.busy = true
		go c.send() //nolint:gosec // G118: one batch serves many requests, so no request's context may end it
	}
	c.mu.Unlock()

	select {
	case <-b.done:
	case <-ctx.Done():
		return dst, "", false, fmt.Errorf("read change versions: %w", ctx.Err())
	}
	if b.err != nil {
		return dst, "", false, fmt.Errorf("read change versions: %w", b.err)
	}
	dst, err := appendVersions(dst, b.vals, idx)
	if err != nil || extraAt < 0 {
		return dst, "", false, err
	}
	entry, found := b.vals[extraAt].(string)
	return dst, entry, found, nil
}

// add puts key in the batch once and returns its index.
func (b *batch) add(key string) int {
	i, ok := b.index[key]
	if !ok {
		i = len(b.keys)
		b.keys = append(b.keys, key)
		b.index[key] = i
	}
	return i
}

// send sends the collecting batch, then the one that collected meanwhile,
// until none is waiting.
func (c *Coalesced) send() {
	for {
		c.mu.Lock()
		b := c.next
		c.next = nil
		if b == nil {
			c.busy = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		// No caller's context: the batch serves many; the client's own
		// timeouts (redisx.Open sets them) bound it.
		c.batches.Add(1)
		bg := context.Background()
		if b.err = c.v.ready(bg); b.err == nil {
			b.vals, b.err = c.v.rdb.MGet(bg, b.keys...).Result()
			b.err = c.v.failed(bg, b.err)
		}
		close(b.done)
	}
}
