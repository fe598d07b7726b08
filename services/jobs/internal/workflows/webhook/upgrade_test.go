package webhook

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

// An upgrade from the shared dispatch (a row per (endpoint, event)) with
// deliveries still open: the job's first event had failed once and waits
// for its retry, its second was queued behind it, and the dispatch
// position was past both. Migration 00055 starts the endpoint's reader at
// that position; the pump then sends the open rows and the events that
// came after the upgrade, each once, the job's in their order.
//
// Not parallel: it sets the shared dispatch position, as the old dispatch
// had left it.
func TestUpgradeKeepsOpenDeliveries(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	acts, ep, job := fixture(t, 7050, "Upgrade Host", rcv.srv.URL)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE webhook_endpoints SET events = '{job.created,job.updated}' WHERE id = $1`, ep.ID)
	newEvent := func(job int64, typ string, version int) {
		t.Helper()
		exec(`INSERT INTO job_events (job_id, type, version, status, prev_status, space_id, key_id)
			VALUES ($1, $2, $3, 'active', 'active', 7050, 1)`, job, typ, version)
	}
	newEvent(job, "job.updated", 2)
	// What the old dispatch left: a row per event of the job, the first
	// failed once (due again now), its position past them.
	exec(`INSERT INTO webhook_deliveries (endpoint_id, event_id, msg_id, type, job_id, version, occurred_at)
		SELECT $1, id, id::text, type, job_id, version, occurred_at FROM job_events WHERE job_id = $2 ORDER BY xid, seq`, ep.ID, job)
	exec(`UPDATE webhook_deliveries SET attempts = 1, response_status = 500, next_try_at = now()
		WHERE id = (SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = $1)`, ep.ID)
	exec(`UPDATE webhook_dispatch SET (xid, seq) = (SELECT xid, seq FROM job_events WHERE job_id = $1 ORDER BY xid DESC, seq DESC LIMIT 1)`, job)
	exec(`DELETE FROM event_readers WHERE reader = $1`, hookbus.ReaderID(ep.ID))
	// The upgrade, then a change of the job and another job's creation.
	up, err := fs.ReadFile(migrations.FS, "00055_event_readers.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmt := string(up)[strings.Index(string(up), "INSERT INTO event_readers"):]
	exec(stmt[:strings.Index(stmt, ";")])
	newEvent(job, "job.updated", 3)
	_, _, other := fixture(t, 7050, "Upgrade Host Two", rcv.srv.URL+"/unused")
	var want []string
	rows, err := pool.Query(ctx, `SELECT id::text FROM job_events WHERE job_id = ANY($1) ORDER BY xid, seq`, []int64{job, other})
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if len(want) != 4 {
		t.Fatalf("%d events", len(want))
	}

	pumpNow(t, acts, ep)
	pumpNow(t, acts, ep) // the round after: the event queued behind the open rows
	rcv.mu.Lock()
	var got []string
	for _, g := range rcv.got {
		got = append(got, g.header.Get("webhook-id"))
	}
	rcv.mu.Unlock()
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if len(got) != 4 || len(slices.Compact(sorted)) != 4 {
		t.Fatalf("after the upgrade the receiver got %v, want each of %v once", got, want)
	}
	var mine []string
	for _, id := range got {
		if slices.Index(want, id) < 3 {
			mine = append(mine, id)
		}
	}
	if !slices.Equal(mine, want[:3]) {
		t.Fatalf("the job's events came as %v, want %v", mine, want[:3])
	}
	var pending int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'succeeded'`, ep.ID).Scan(&pending); err != nil || pending != 0 {
		t.Fatalf("%d rows left open: %v", pending, err)
	}
}
