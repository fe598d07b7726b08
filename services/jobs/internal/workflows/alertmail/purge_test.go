package alertmail

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
)

// TestPurgeUnconfirmed: the relay's loop purges on its first round (then
// hourly) the alerts left unconfirmed past 48 h, with their matches; an
// unconfirmed alert younger than that and a confirmed one however old stay.
func TestPurgeUnconfirmed(t *testing.T) {
	r, _ := fixture(t)
	ctx := context.Background()
	run := fmt.Sprintf("%08x", rand.Uint32()) // a city slug: lower-case hex, not a nonce's base64
	old := saved(t, r, "old-"+run+"@seeker.example", "q=purge&city=purge-"+run, false)
	young := saved(t, r, "young-"+run+"@seeker.example", "q=purge&city=purge-"+run, false)
	kept := saved(t, r, "kept-"+run+"@seeker.example", "q=purge&city=purge-"+run, true)
	for id, age := range map[int64]time.Duration{old.ID: alertbus.UnconfirmedTTL + time.Minute,
		young.ID: alertbus.UnconfirmedTTL - time.Hour, kept.ID: 10 * alertbus.UnconfirmedTTL} {
		if _, err := pool.Exec(ctx, `UPDATE alerts SET created_at = now() - $2::interval WHERE id = $1`, id, age.String()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO alert_matches (alert_id, job_id) VALUES ($1, 1)`, old.ID); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	r.Interval = 20 * time.Millisecond
	go func() { done <- r.Run(rctx) }()
	exists := func(id int64) bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM alerts WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	for deadline := time.Now().Add(30 * time.Second); exists(old.ID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the alert unconfirmed for 48 h is still there after 30 s of the relay")
		}
	}
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the relay: %v", err)
	}
	if !exists(young.ID) || !exists(kept.ID) {
		t.Fatalf("purged too much: young %v, confirmed %v", exists(young.ID), exists(kept.ID))
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM alert_matches WHERE alert_id = $1`, old.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d matches of the purged alert left (%v)", n, err)
	}
	// The store's own answer: nothing more is due.
	if n, err := r.Store.PurgeUnconfirmed(ctx); err != nil || n != 0 {
		t.Fatalf("a second purge deleted %d (%v)", n, err)
	}
}
