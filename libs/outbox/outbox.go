// Package outbox relays a transactional outbox: rows a service writes in the
// transaction of its business change, handed afterwards to another system
// (Temporal, a webhook endpoint) by a worker, so that the change never waits
// for that system and nothing is lost while it is away.
//
// The service's store describes its table (a Table: name, due-time column,
// payload columns and where they are read into) and the relay writes the
// statements. The statements are the mechanism (the claim that lets relays
// in several replicas share a table, the back-off, the delete): written by
// each store they were the same four statements with other names, and they
// drifted. The store keeps what is its own: the table's schema, its row
// model, which rows must stay in order.
//
// A round claims up to Batch due rows in one transaction with FOR UPDATE
// SKIP LOCKED (another relay skips them; none is held twice), delivers them,
// deletes the delivered ones and backs off the failed ones (capped
// exponential back-off with jitter, the error text kept), and commits.
// Delivery is at least once: a crash between a delivery and the commit
// delivers that row again, so deliveries must be idempotent.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The retry rules every relay shares unless a test sets its own.
const (
	DefaultInterval    = time.Second
	DefaultBatch       = 100
	DefaultConcurrency = 8
	// DefaultSendTimeout bounds one delivery: the round holds its rows'
	// locks until every delivery has answered.
	DefaultSendTimeout = 5 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	// MaxErrorText is how much of a failed delivery's error is kept in the row.
	MaxErrorText = 1000
)

// DB is what the relay needs of a pool (*pgxpool.Pool has it).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Table is one outbox table as its store describes it. Besides the payload
// columns the table has id bigint (the order rows are claimed in), attempts
// integer (failed deliveries), last_error text, created_at timestamptz and
// the due-time column (timestamptz, default now()).
type Table[T any] struct {
	DB DB
	// Name is the table; it also labels the metrics and logs.
	Name string
	// Due is the column holding when a row is due (again).
	Due string
	// Columns are the payload columns, read into the destinations Payload
	// returns, in this order.
	Columns []string
	Payload func(*T) []any
	// Key, when set, keeps rows of one key in order: they are delivered one
	// after another in id order, and after a failure the rest of that key
	// wait for the next round. Rows without a Key, or of other keys, go
	// concurrently.
	Key func(T) string
}

// Message is one claimed row.
type Message[T any] struct {
	ID int64
	// Attempts counts the failed deliveries before this one.
	Attempts int
	Payload  T
}

// Result is what one round did.
type Result struct {
	Claimed, Delivered, Failed int
}

// Relay delivers the rows of a Table.
type Relay[T any] struct {
	Table   Table[T]
	Deliver func(context.Context, Message[T]) error
	Log     *slog.Logger // nil: not logged
	Metrics *Metrics     // nil: not counted

	// Zero values take the defaults above.
	Interval    time.Duration // between polls
	Batch       int           // rows claimed per round
	Concurrency int           // deliveries in flight
	SendTimeout time.Duration
	MinBackoff  time.Duration // the wait after a first failure; it doubles with each
	MaxBackoff  time.Duration // the cap on that wait
}

func orDefault[N time.Duration | int](v, def N) N {
	if v <= 0 {
		return def
	}
	return v
}

func (r *Relay[T]) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Run relays until ctx ends: a round every Interval, and the next one at
// once after a full batch delivered without failure, so a backlog drains at
// full speed while a failing target is asked once per Interval.
func (r *Relay[T]) Run(ctx context.Context) error {
	r.Metrics.init(r.Table.Name)
	t := time.NewTicker(orDefault(r.Interval, DefaultInterval))
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			res, err := r.RunOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.log().Warn("outbox relay", "outbox", r.Table.Name, "error", err)
				}
				break
			}
			if res.Failed > 0 || res.Claimed < orDefault(r.Batch, DefaultBatch) {
				break
			}
		}
		r.observeLag(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce runs one round (Run's step; tests call it directly).
func (r *Relay[T]) RunOnce(ctx context.Context) (Result, error) {
	tb := &r.Table
	tx, err := tb.DB.Begin(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, tb.claimSQL(), orDefault(r.Batch, DefaultBatch))
	if err != nil {
		return Result{}, fmt.Errorf("claim %s: %w", tb.Name, err)
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Message[T], error) {
		var m Message[T]
		return m, row.Scan(append([]any{&m.ID, &m.Attempts}, tb.Payload(&m.Payload)...)...)
	})
	if err != nil {
		return Result{}, fmt.Errorf("scan %s: %w", tb.Name, err)
	}
	errs := r.deliverAll(ctx, msgs)
	res := Result{Claimed: len(msgs)}
	var done []int64
	for i, m := range msgs {
		switch {
		case errs[i] == nil:
			done = append(done, m.ID)
		case errors.Is(errs[i], errNotTried):
			// left as it was, for the next round
		default:
			wait := r.Backoff(m.Attempts)
			if _, err := tx.Exec(ctx, tb.retrySQL(), m.ID, ErrorText(errs[i]), wait.Seconds()); err != nil {
				return Result{}, fmt.Errorf("back off %s: %w", tb.Name, err)
			}
			res.Failed++
			r.log().Warn("outbox delivery failed; will retry", "outbox", tb.Name, "id", m.ID,
				"attempts", m.Attempts+1, "retry_in", wait.Round(time.Millisecond).String(), "error", errs[i])
		}
	}
	if len(done) > 0 {
		if _, err := tx.Exec(ctx, tb.deleteSQL(), done); err != nil {
			return Result{}, fmt.Errorf("delete %s: %w", tb.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Result{}, fmt.Errorf("commit %s: %w", tb.Name, err)
	}
	res.Delivered = len(done)
	r.Metrics.count(tb.Name, res)
	return res, nil
}

// errNotTried marks a claimed row left as it was for the next round.
var errNotTried = errors.New("not tried this round")

// deliverAll delivers msgs and returns each one's error. The first goes
// alone: while the target is down a round costs one timeout, not one per
// row, and the others wait untouched. Once it has answered the rest go
// concurrently (one at a time a relay falls behind a burst of writes).
func (r *Relay[T]) deliverAll(ctx context.Context, msgs []Message[T]) []error {
	errs := make([]error, len(msgs))
	for i := range errs {
		errs[i] = errNotTried
	}
	if len(msgs) == 0 {
		return errs
	}
	if errs[0] = r.send(ctx, msgs[0]); errs[0] != nil {
		return errs
	}
	// Runs of one key go through one goroutine, in order.
	var runs [][]int
	byKey := map[string]int{}
	for i := 1; i < len(msgs); i++ {
		if r.Table.Key == nil {
			runs = append(runs, []int{i})
			continue
		}
		k := r.Table.Key(msgs[i].Payload)
		if j, ok := byKey[k]; ok {
			runs[j] = append(runs[j], i)
			continue
		}
		byKey[k] = len(runs)
		runs = append(runs, []int{i})
	}
	sem := make(chan struct{}, orDefault(r.Concurrency, DefaultConcurrency))
	var wg sync.WaitGroup
	for _, run := range runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for _, i := range run {
				if errs[i] = r.send(ctx, msgs[i]); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errs
}

func (r *Relay[T]) send(ctx context.Context, m Message[T]) error {
	ctx, cancel := context.WithTimeout(ctx, orDefault(r.SendTimeout, DefaultSendTimeout))
	defer cancel()
	return r.Deliver(ctx, m)
}

// Backoff is the wait before the next delivery of a row that has now failed
// attempts+1 times: MinBackoff doubled per earlier failure, capped at
// MaxBackoff, drawn from [wait/2, wait] so that rows (and replicas) that
// failed together do not retry in step.
func (r *Relay[T]) Backoff(attempts int) time.Duration {
	minB, maxB := orDefault(r.MinBackoff, DefaultMinBackoff), orDefault(r.MaxBackoff, DefaultMaxBackoff)
	wait := maxB
	if attempts < 32 {
		if d := minB << attempts; d > 0 && d < maxB {
			wait = d
		}
	}
	return wait/2 + rand.N(wait/2+1) //nolint:gosec // G404: jitter, not a secret
}

// ErrorText is err's text as the row keeps it: at most MaxErrorText bytes of
// valid UTF-8 without NUL (PostgreSQL's text refuses both), so that a long
// or odd error cannot fail the round that records it.
func ErrorText(err error) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if len(s) <= MaxErrorText {
		return s
	}
	cut := MaxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func (tb *Table[T]) claimSQL() string {
	cols := make([]string, 0, 2+len(tb.Columns))
	cols = append(cols, "id", "attempts")
	for _, c := range tb.Columns {
		cols = append(cols, ident(c))
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + ident(tb.Name) +
		" WHERE " + ident(tb.Due) + " <= now() ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED"
}

func (tb *Table[T]) retrySQL() string {
	return "UPDATE " + ident(tb.Name) + " SET attempts = attempts + 1, last_error = $2, " +
		ident(tb.Due) + " = now() + make_interval(secs => $3) WHERE id = $1"
}

func (tb *Table[T]) deleteSQL() string {
	return "DELETE FROM " + ident(tb.Name) + " WHERE id = ANY($1)"
}

// observeLag sets the lag gauge to the age of the oldest row (0 when the
// table is empty): a row that waits long, delivered or backing off, is what
// an alert wants to see.
func (r *Relay[T]) observeLag(ctx context.Context) {
	if r.Metrics == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(r.SendTimeout, DefaultSendTimeout))
	defer cancel()
	var oldest time.Time
	err := r.Table.DB.QueryRow(ctx, "SELECT created_at FROM "+ident(r.Table.Name)+" ORDER BY id LIMIT 1").Scan(&oldest)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		r.Metrics.lag.WithLabelValues(r.Table.Name).Set(0)
	case err == nil:
		r.Metrics.lag.WithLabelValues(r.Table.Name).Set(max(time.Since(oldest).Seconds(), 0))
	}
}

// Metrics are the relays' instruments, labelled by outbox (table name). One
// Metrics serves every relay of a process.
type Metrics struct {
	deliveries *prometheus.CounterVec
	lag        *prometheus.GaugeVec
}

// NewMetrics registers outbox_deliveries_total{outbox,outcome} and
// outbox_lag_seconds{outbox} on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		deliveries: f.NewCounterVec(prometheus.CounterOpts{Name: "outbox_deliveries_total",
			Help: "Outbox rows handed on, by outbox and outcome (delivered: removed from the outbox; failed: kept, retried after a back-off)."},
			[]string{"outbox", "outcome"}),
		lag: f.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_lag_seconds",
			Help: "Age of the oldest row still in the outbox, measured after each relay round; 0 when it is empty."},
			[]string{"outbox"}),
	}
}

// init exports the relay's series at 0 before its first round.
func (m *Metrics) init(name string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(name, "delivered")
	m.deliveries.WithLabelValues(name, "failed")
	m.lag.WithLabelValues(name)
}

func (m *Metrics) count(name string, res Result) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(name, "delivered").Add(float64(res.Delivered))
	m.deliveries.WithLabelValues(name, "failed").Add(float64(res.Failed))
}
