package pgtest_test

import (
	"context"
	"os"
	"testing"
	"testing/fstest"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

var db pgtest.Migrated

var notes = fstest.MapFS{
	"00001_notes.sql": {Data: []byte("-- +goose Up\nCREATE TABLE notes (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE notes;\n")},
}

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "libs_pgtest", pgtest.Schema{Name: "shared", Migrations: notes},
		func(d pgtest.Migrated) error { db = d; return nil }))
}

func TestMainMigratedSharesOneMigratedPool(t *testing.T) {
	var schema string
	if err := db.Pool.QueryRow(context.Background(), `SELECT 'notes'::regclass::text, current_schema()`).Scan(new(string), &schema); err != nil {
		t.Fatal(err)
	}
	if schema != "shared" || db.URL == "" {
		t.Fatalf("schema %q, url %q", schema, db.URL)
	}
}

func TestOpenGivesATestItsOwnSchema(t *testing.T) {
	pool := pgtest.Open(t, db.URL, pgtest.Schema{Name: "own", Migrations: notes})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO notes VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	var own, shared int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM own.notes), (SELECT count(*) FROM shared.notes)`).Scan(&own, &shared); err != nil {
		t.Fatal(err)
	}
	if own != 1 || shared != 0 {
		t.Fatalf("own %d, shared %d rows: want the insert in the test's schema only", own, shared)
	}
}
