package pg

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the shell a service's store embeds when its reads may go to a
// streaming replica (DATABASE_READ_URL): the primary pool, where writes
// always go, and the routing of its reads. Built by NewStore, every read
// runs on the pool; WithReads routes them through Reads, and After makes
// them wait for a write of the caller's (read-your-writes). It is a value:
// each method returns a new shell and leaves s as it was.
type Store struct {
	// Pool is the primary: every write, and every read without routing.
	Pool  *pgxpool.Pool
	reads *Reads
	after LSN
}

// NewStore returns the shell of a store over pool; its reads run on pool.
func NewStore(pool *pgxpool.Pool) Store { return Store{Pool: pool} }

// WithReads returns s with its reads routed through reads: to the replica
// when it is up (and has replayed After's position), else to the primary.
// nil keeps every read on Pool.
func (s Store) WithReads(reads *Reads) Store {
	s.reads = reads
	return s
}

// After returns s whose reads run on the replica only once it has replayed
// pos (the primary's WAL position just after the caller's last write), on
// the primary until then.
func (s Store) After(pos LSN) Store {
	s.after = pos
	return s
}

// Routed reports whether s's reads may go to a replica: WithReads was given
// a Reads with a replica configured.
func (s Store) Routed() bool { return s.reads != nil && s.reads.Replica() }

// Read runs fn where s's reads go. fn must be a read with no effect beyond
// its error: when the replica fails, it runs again on the primary.
func (s Store) Read(ctx context.Context, fn func(*pgxpool.Pool) error) error {
	if s.reads == nil {
		return fn(s.Pool)
	}
	return s.reads.Read(ctx, s.after, fn)
}
