package pg

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// LSN is a WAL position (pg_lsn) as a number of bytes; 0 is the start.
type LSN int64

// LSNSQL turns a pg_lsn expression into an LSN (a bigint).
func LSNSQL(expr string) string { return `((` + expr + `) - '0/0'::pg_lsn)::bigint` }

// Reads sends the reads that may run on a streaming replica
// (DATABASE_READ_URL) there, and every other read to the primary. A read
// that must see a write (read-your-writes) names the primary's WAL position
// just after that write: it runs on the replica only once the replica has
// replayed that far, on the primary until then. A replica that fails is
// left for the primary until it answers again; it never makes the service
// unready.
type Reads struct {
	primary, replica *pgxpool.Pool
	log              *slog.Logger
	reads            *prometheus.CounterVec
	replay           atomic.Int64 // the replica's last replayed position, as last seen
	down             atomic.Bool
}

// Read pools, the label of pg_reads_total.
const (
	ReadReplica  = "replica"  // the replica answered
	ReadPrimary  = "primary"  // no replica, or it had not yet replayed the caller's write
	ReadFallback = "fallback" // the replica was down or failed the read
)

// NewReads routes reads between primary and replica (nil: every read on
// the primary, as without DATABASE_READ_URL).
func NewReads(primary, replica *pgxpool.Pool, log *slog.Logger) *Reads {
	r := &Reads{primary: primary, replica: replica, log: log,
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pg_reads_total",
			Help: "Reads that may use the replica, by the pool that answered: replica, primary (no replica, or it lags behind the caller's write) or fallback (the replica failed)."},
			[]string{"pool"})}
	for _, p := range []string{ReadReplica, ReadPrimary, ReadFallback} {
		r.reads.WithLabelValues(p)
	}
	return r
}

// Replica reports whether a replica is configured.
func (r *Reads) Replica() bool { return r.replica != nil }

// Collector exports pg_reads_total.
func (r *Reads) Collector() prometheus.Collector { return r.reads }

// Counter is pg_reads_total of pool (ReadReplica, ReadPrimary, ReadFallback).
func (r *Reads) Counter(pool string) prometheus.Counter { return r.reads.WithLabelValues(pool) }

// Read runs fn on the replica when it is up and has replayed after (0:
// any position will do), else on the primary. When the replica fails
// (connection refused or lost, a recovery conflict, a server shutting
// down) fn runs again on the primary, so fn must not have had any effect
// beyond its error (a read).
func (r *Reads) Read(ctx context.Context, after LSN, fn func(*pgxpool.Pool) error) error {
	if r.replica == nil {
		r.reads.WithLabelValues(ReadPrimary).Inc()
		return fn(r.primary)
	}
	if r.down.Load() {
		r.reads.WithLabelValues(ReadFallback).Inc()
		return fn(r.primary)
	}
	if after > LSN(r.replay.Load()) {
		// The cached position may be old: ask once before giving up.
		if err := r.refresh(ctx); err != nil {
			r.setDown(err)
			r.reads.WithLabelValues(ReadFallback).Inc()
			return fn(r.primary)
		}
		if after > LSN(r.replay.Load()) {
			r.reads.WithLabelValues(ReadPrimary).Inc()
			return fn(r.primary)
		}
	}
	err := fn(r.replica)
	if err == nil || ctx.Err() != nil || !unavailable(err) {
		r.reads.WithLabelValues(ReadReplica).Inc()
		if m, ok := ctx.Value(replicaMarkKey{}).(*atomic.Bool); ok {
			m.Store(true)
		}
		return err
	}
	r.setDown(err)
	r.reads.WithLabelValues(ReadFallback).Inc()
	return fn(r.primary)
}

type replicaMarkKey struct{}

// MarkReplicaReads returns a context under which Read records whether any
// read ran on the replica, and that record. The API server marks such an
// answer for the gateway (web.HeaderReadReplica), which must not cache it
// under change versions the replica may not have replayed yet.
func MarkReplicaReads(ctx context.Context) (context.Context, *atomic.Bool) {
	m := new(atomic.Bool)
	return context.WithValue(ctx, replicaMarkKey{}, m), m
}

// Watch polls the replica every interval until ctx ends: its replay
// position, and whether it is up (logged once per change). Without a
// replica it returns at once.
func (r *Reads) Watch(ctx context.Context, interval time.Duration) error {
	if r.replica == nil {
		return nil
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.setDown(err)
		} else if r.down.CompareAndSwap(true, false) {
			r.log.Info("read replica is back: reads go to it again")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// refresh reads the replica's replay position; a server that is not in
// recovery (DATABASE_READ_URL naming a primary) is always current.
func (r *Reads) refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var pos *int64
	if err := r.replica.QueryRow(ctx, `SELECT `+LSNSQL(`pg_last_wal_replay_lsn()`)).Scan(&pos); err != nil {
		return err
	}
	v := int64(math.MaxInt64)
	if pos != nil {
		v = *pos
	}
	r.replay.Store(v)
	return nil
}

func (r *Reads) setDown(err error) {
	if r.down.CompareAndSwap(false, true) {
		r.log.Warn("read replica unavailable: reads go to the primary", "error", err)
	}
}

// unavailable reports an error of the replica rather than of the read:
// the connection, a recovery conflict (class 40001 on a standby), a server
// starting or shutting down (class 57P).
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || len(pe.Code) == 5 && pe.Code[:3] == "57P"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}
