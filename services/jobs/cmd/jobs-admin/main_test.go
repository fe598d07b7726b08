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

// erase-alerts -email against the real PostgreSQL: every alert of the
// address goes, whatever the case it was typed in, with its matches; other
// addresses' alerts stay; no address is an error.
func TestEraseAlerts(t *testing.T) {
	t.Setenv("DATABASE_URL", dbURL)
	ctx := context.Background()
	var mia1, mia2, other int64
	for _, a := range []struct {
		email, search string
		id            *int64
	}{{"mia@example.com", "q=barista", &mia1}, {"mia@example.com", "city=lisbon", &mia2}, {"leo@example.com", "q=barista", &other}} {
		if err := pool.QueryRow(ctx, `INSERT INTO alerts (email, search, frequency, nonce, confirmed_at) VALUES ($1, $2, 'instant', 'n', now())
			RETURNING id`, a.email, a.search).Scan(a.id); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO alert_matches (alert_id, job_id) VALUES ($1, 1)`, *a.id); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"erase-alerts", "-email", " MIA@Example.com "}, &out); err != nil {
		t.Fatalf("erase-alerts: %v (%s)", err, out.String())
	}
	if got := strings.TrimSpace(out.String()); got != "2 alerts deleted" {
		t.Fatalf("erase-alerts printed %q", got)
	}
	count := func(sql string, args ...any) int {
		var n int
		if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM alerts WHERE lower(email) = 'mia@example.com'`); n != 0 {
		t.Fatalf("%d alerts of the address left", n)
	}
	if n := count(`SELECT count(*) FROM alert_matches WHERE alert_id = ANY($1)`, []int64{mia1, mia2}); n != 0 {
		t.Fatalf("%d matches of the erased alerts left", n)
	}
	if n := count(`SELECT count(*) FROM alerts a JOIN alert_matches m ON m.alert_id = a.id WHERE a.id = $1`, other); n != 1 {
		t.Fatalf("another address's alert and match: %d rows, want 1", n)
	}
	out.Reset()
	if err := run(ctx, []string{"erase-alerts", "-email", "mia@example.com"}, &out); err != nil || strings.TrimSpace(out.String()) != "0 alerts deleted" {
		t.Fatalf("erasing again: %v %q", err, out.String())
	}
	if err := run(ctx, []string{"erase-alerts"}, &out); err == nil || !strings.Contains(err.Error(), "-email is required") {
		t.Fatalf("no -email: %v", err)
	}
}
