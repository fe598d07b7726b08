package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var (
	pool  *pgxpool.Pool
	dbURL string
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_admin", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 3}},
		func(db pgtest.Migrated) error { pool, dbURL = db.Pool, db.URL; return nil }))
}

// erase-address -email against the real PostgreSQL, with community away
// (the cross-service path is tests/e2e/privacy's): every alert of the
// address goes, whatever the case it was typed in, with its matches and the
// address row; the community erasure is queued, not lost; other addresses'
// alerts stay; no address is an error.
func TestEraseAddress(t *testing.T) {
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("INTERNAL_IDENTITY_SECRET", "jobs-admin-test-secret-of-32-bytes!!")
	t.Setenv("COMMUNITY_URL", "http://127.0.0.1:1") // nothing listens there
	ctx := context.Background()
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	queued := count(`SELECT count(*) FROM privacy_outbox`)
	var mia1, mia2, other int64
	for _, a := range []struct {
		email, search string
		id            *int64
	}{{"mia@example.com", "q=barista", &mia1}, {"mia@example.com", "city=lisbon", &mia2}, {"leo@example.com", "q=barista", &other}} {
		if err := pool.QueryRow(ctx, `WITH ad AS (INSERT INTO alert_addresses (email) VALUES ($1)
				ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING id)
			INSERT INTO alerts (address_id, search, frequency, nonce, confirmed_at) SELECT id, $2, 'instant', 'n', now() FROM ad
			RETURNING id`, a.email, a.search).Scan(a.id); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO alert_matches (alert_id, job_id) VALUES ($1, 1)`, *a.id); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"erase-address", "-email", " MIA@Example.com "}, &out); err != nil {
		t.Fatalf("erase-address: %v (%s)", err, out.String())
	}
	if got := out.String(); !strings.Contains(got, "jobs: 2 alerts erased") || !strings.Contains(got, "community: not reached now") {
		t.Fatalf("erase-address printed %q", got)
	}
	if n := count(`SELECT count(*) FROM alert_addresses WHERE email = 'mia@example.com'`); n != 0 {
		t.Fatalf("the address row is left (%d)", n)
	}
	if n := count(`SELECT count(*) FROM alerts WHERE id = ANY($1)`, []int64{mia1, mia2}); n != 0 {
		t.Fatalf("%d alerts of the address left", n)
	}
	if n := count(`SELECT count(*) FROM alert_matches WHERE alert_id = ANY($1)`, []int64{mia1, mia2}); n != 0 {
		t.Fatalf("%d matches of the erased alerts left", n)
	}
	if n := count(`SELECT count(*) FROM alerts a JOIN alert_matches m ON m.alert_id = a.id WHERE a.id = $1`, other); n != 1 {
		t.Fatalf("another address's alert and match: %d rows, want 1", n)
	}
	if n := count(`SELECT count(*) FROM privacy_outbox`); n != queued+1 {
		t.Fatalf("privacy outbox %d rows, want %d: the newsletter's erasure must wait for community", n, queued+1)
	}
	if n := count(`SELECT count(*) FROM privacy_outbox WHERE token ILIKE '%mia%'`); n != 0 {
		t.Fatal("the outbox holds the address in clear")
	}
	out.Reset()
	if err := run(ctx, []string{"erase-address", "-email", "mia@example.com"}, &out); err != nil || !strings.Contains(out.String(), "jobs: 0 alerts erased") {
		t.Fatalf("erasing again: %v %q", err, out.String())
	}
	if err := run(ctx, []string{"erase-address"}, &out); err == nil || !strings.Contains(err.Error(), "-email is required") {
		t.Fatalf("no -email: %v", err)
	}
}
