package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	var dbURL string
	os.Exit(pgtest.Main("libs_outbox", func() int {
		var err error
		if pool, err = pg.Open(context.Background(), dbURL, "public", pg.Options{MaxConns: 10}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pool.Close()
		return m.Run()
	}, func(u string) { dbURL = u }))
}

// item is a test outbox's payload: the key whose rows keep their order, and
// the position within it.
type item struct {
	Key string
	Seq int
}

// newTable creates an outbox table of its own for one test, with n rows
// spread over keys keys.
func newTable(t *testing.T, n, keys int) outbox.Table[item] {
	t.Helper()
	name := "outbox_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE `+pgx.Identifier{name}.Sanitize()+` (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, key text NOT NULL, seq integer NOT NULL,
		attempts integer NOT NULL DEFAULT 0, due_at timestamptz NOT NULL DEFAULT now(), last_error text,
		created_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE "+pgx.Identifier{name}.Sanitize()) })
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{name}.Sanitize()+` (key, seq)
		SELECT 'k' || (i % $2), i FROM generate_series(1, $1) i`, n, max(keys, 1)); err != nil {
		t.Fatal(err)
	}
	return outbox.Table[item]{DB: pool, Name: name, Due: "due_at", Columns: []string{"key", "seq"},
		Payload: func(it *item) []any { return []any{&it.Key, &it.Seq} },
		Key:     func(it item) string { return it.Key }}
}

func count(t *testing.T, tb outbox.Table[item], where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{tb.Name}.Sanitize()+" WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// value is the sample of metric for outbox (and outcome, when not empty) in reg.
func value(t *testing.T, reg *prometheus.Registry, metric, name, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["outbox"] == name && labels["outcome"] == outcome {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// Relays running side by side (replicas of a worker) share the table: every
// row is delivered exactly once when every delivery succeeds.
func TestConcurrentRelaysDeliverEachRowOnce(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 400, 400)
	var mu sync.Mutex
	seen := map[int64]int{}
	deliver := func(context.Context, outbox.Message[item]) error {
		time.Sleep(time.Millisecond) // long enough for the relays' rounds to overlap
		return nil
	}
	var wg sync.WaitGroup
	for range 4 {
		r := &outbox.Relay[item]{Table: tb, Batch: 25, Deliver: func(ctx context.Context, m outbox.Message[item]) error {
			mu.Lock()
			seen[m.ID]++
			mu.Unlock()
			return deliver(ctx, m)
		}}
		wg.Go(func() {
			for {
				res, err := r.RunOnce(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if res.Claimed == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != 400 {
		t.Fatalf("%d rows delivered, want 400", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("row %d delivered %d times", id, n)
		}
	}
	if left := count(t, tb, "true"); left != 0 {
		t.Fatalf("%d rows left", left)
	}
}

// A row claimed by a relay still delivering it is invisible to another.
func TestClaimedRowsAreSkipped(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 6, 6)
	release := make(chan struct{})
	holding := make(chan struct{})
	var once sync.Once
	slow := &outbox.Relay[item]{Table: tb, Batch: 4, Deliver: func(ctx context.Context, _ outbox.Message[item]) error {
		once.Do(func() { close(holding) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	done := make(chan outbox.Result, 1)
	go func() {
		res, err := slow.RunOnce(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-holding
	var got []int64
	other := &outbox.Relay[item]{Table: tb, Deliver: func(_ context.Context, m outbox.Message[item]) error {
		got = append(got, m.ID)
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := other.RunOnce(ctx) // a relay that waited for the held rows would time out
	if err != nil || res.Claimed != 2 || res.Delivered != 2 {
		t.Fatalf("second relay: %+v %v, want the 2 rows the first does not hold", res, err)
	}
	if got[0] != 5 || got[1] != 6 {
		t.Fatalf("second relay delivered %v, want [5 6]", got)
	}
	close(release)
	if res := <-done; res.Delivered != 4 {
		t.Fatalf("first relay: %+v", res)
	}
}

// A failed delivery keeps the row with its attempt and error and makes it
// due after the back-off; it is retried then and removed. The metrics count
// both outcomes.
func TestFailedDeliveryBacksOffAndIsRetried(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 1, 1)
	reg := prometheus.NewRegistry()
	down := true
	r := &outbox.Relay[item]{Table: tb, Metrics: outbox.NewMetrics(reg), MinBackoff: 400 * time.Millisecond, MaxBackoff: time.Minute,
		Deliver: func(context.Context, outbox.Message[item]) error {
			if down {
				// Longer than the row keeps, multi-byte across the cut, a NUL.
				return errors.New("down\x00" + strings.Repeat("é", outbox.MaxErrorText))
			}
			return nil
		}}
	ctx := context.Background()
	before := time.Now()
	res, err := r.RunOnce(ctx)
	after := time.Now()
	if err != nil || res != (outbox.Result{Claimed: 1, Failed: 1}) {
		t.Fatalf("down: %+v %v", res, err)
	}
	var attempts int
	var lastError string
	var dueAt time.Time
	if err := pool.QueryRow(ctx, "SELECT attempts, last_error, due_at FROM "+pgx.Identifier{tb.Name}.Sanitize()).
		Scan(&attempts, &lastError, &dueAt); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || !strings.HasPrefix(lastError, "downé") || len(lastError) > outbox.MaxErrorText || !utf8.ValidString(lastError) {
		t.Fatalf("attempts %d, last_error (%d bytes) %.20q", attempts, len(lastError), lastError)
	}
	if dueAt.Before(before.Add(200*time.Millisecond)) || dueAt.After(after.Add(400*time.Millisecond)) {
		t.Fatalf("due again %v after the round began, want 200ms to 400ms after the failure", dueAt.Sub(before))
	}
	if res, err := r.RunOnce(ctx); err != nil || (res.Claimed != 0 && time.Now().Before(dueAt)) {
		t.Fatalf("backing off, yet claimed: %+v %v", res, err)
	}

	down = false
	time.Sleep(time.Until(dueAt) + 50*time.Millisecond)
	if res, err := r.RunOnce(ctx); err != nil || res != (outbox.Result{Claimed: 1, Delivered: 1}) {
		t.Fatalf("up: %+v %v", res, err)
	}
	if left := count(t, tb, "true"); left != 0 {
		t.Fatalf("%d rows left", left)
	}
	for outcome, want := range map[string]float64{"delivered": 1, "failed": 1} {
		if got := value(t, reg, "outbox_deliveries_total", tb.Name, outcome); got != want {
			t.Fatalf("outbox_deliveries_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
}

// The back-off doubles from MinBackoff, is capped at MaxBackoff, and is
// drawn from [wait/2, wait].
func TestBackoffIsCappedWithJitter(t *testing.T) {
	t.Parallel()
	r := &outbox.Relay[item]{}
	for attempts, wait := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 4: 16 * time.Second,
		8: 256 * time.Second, 9: 5 * time.Minute, 63: 5 * time.Minute, 1000: 5 * time.Minute} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := r.Backoff(attempts)
			if d < wait/2 || d > wait {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", attempts, d, wait/2, wait)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Fatalf("Backoff(%d) always %v: no jitter", attempts, seen)
		}
	}

	// In the table: a row that failed many times is due within the cap.
	tb := newTable(t, 1, 1)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "UPDATE "+pgx.Identifier{tb.Name}.Sanitize()+" SET attempts = 40"); err != nil {
		t.Fatal(err)
	}
	capped := &outbox.Relay[item]{Table: tb, MaxBackoff: 3 * time.Second,
		Deliver: func(context.Context, outbox.Message[item]) error { return errors.New("down") }}
	if _, err := capped.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tb, "attempts = 41 AND due_at BETWEEN now() + interval '1 second' AND now() + interval '3 seconds'"); n != 1 {
		t.Fatal("a row past many failures is not due within the cap")
	}
}

// The first row goes alone: while the target is down one row fails and the
// others wait untouched. Once it answers, the rest go concurrently but the
// rows of one key one after another, in order.
func TestFirstRowProbesThenKeysInOrder(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 40, 4)
	ctx := context.Background()
	failing := &outbox.Relay[item]{Table: tb, Deliver: func(context.Context, outbox.Message[item]) error { return errors.New("down") }}
	if res, err := failing.RunOnce(ctx); err != nil || res != (outbox.Result{Claimed: 40, Failed: 1}) {
		t.Fatalf("down: %+v %v", res, err)
	}
	if n := count(t, tb, "attempts = 0"); n != 39 {
		t.Fatalf("%d rows untouched, want 39", n)
	}
	if _, err := pool.Exec(ctx, "UPDATE "+pgx.Identifier{tb.Name}.Sanitize()+" SET due_at = now()"); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	last := map[string]int{}
	busy := map[string]bool{}
	inFlight, most := 0, 0
	r := &outbox.Relay[item]{Table: tb, Deliver: func(_ context.Context, m outbox.Message[item]) error {
		k := m.Payload.Key
		mu.Lock()
		if busy[k] || m.Payload.Seq < last[k] {
			t.Errorf("key %s: seq %d while busy=%v or after %d", k, m.Payload.Seq, busy[k], last[k])
		}
		busy[k], last[k] = true, m.Payload.Seq
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		// Wait (boundedly) for a delivery of another key to join.
		for range 100 {
			mu.Lock()
			joined := most >= 2
			mu.Unlock()
			if joined {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		busy[k] = false
		inFlight--
		mu.Unlock()
		return nil
	}}
	if res, err := r.RunOnce(ctx); err != nil || res != (outbox.Result{Claimed: 40, Delivered: 40}) {
		t.Fatalf("up: %+v %v", res, err)
	}
	if most < 2 || most > 4 {
		t.Fatalf("%d deliveries in flight at most, want 2 to 4 (four keys)", most)
	}
}

// Run drains a backlog larger than a batch without waiting for the ticker,
// keeps a failing row, and reports its age as the lag; its registry is
// promlint clean.
func TestRunDrainsAndReportsLag(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 250, 250)
	reg := prometheus.NewRegistry()
	r := &outbox.Relay[item]{Table: tb, Metrics: outbox.NewMetrics(reg), Batch: 50, Interval: time.Hour, MinBackoff: time.Hour,
		Deliver: func(_ context.Context, msg outbox.Message[item]) error {
			if msg.Payload.Seq == 250 {
				return errors.New("refused")
			}
			return nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for count(t, tb, "true") > 1 || value(t, reg, "outbox_lag_seconds", tb.Name, "") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not drained within 10s (interval 1h): %d rows left", count(t, tb, "true"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := value(t, reg, "outbox_deliveries_total", tb.Name, "delivered"); got != 249 {
		t.Fatalf("delivered %v, want 249", got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// A table whose rows fail to scan fails the round and changes nothing.
func TestRoundFailsWholeOnBadPayload(t *testing.T) {
	t.Parallel()
	tb := newTable(t, 3, 3)
	tb.Payload = func(it *item) []any { return []any{&it.Seq, &it.Key} } // wrong types
	r := &outbox.Relay[item]{Table: tb, Deliver: func(context.Context, outbox.Message[item]) error {
		t.Error("delivered a row that did not scan")
		return nil
	}}
	if _, err := r.RunOnce(context.Background()); err == nil {
		t.Fatal("no error")
	}
	if n := count(t, tb, "attempts = 0"); n != 3 {
		t.Fatalf("%d rows untouched, want 3", n)
	}
}
