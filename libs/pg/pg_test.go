package pg_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(pgtest.MainURL(m, "libs_pg", &dbURL)) }

var migrations = fstest.MapFS{
	"00001_init.sql": {Data: []byte("-- +goose Up\nCREATE TABLE things (id int PRIMARY KEY, name text UNIQUE);\n-- +goose Down\nDROP TABLE things;\n")},
	"00002_more.sql": {Data: []byte("-- +goose Up\nALTER TABLE things ADD COLUMN note text;\n-- +goose Down\nALTER TABLE things DROP COLUMN note;\n")},
}

func TestMigrateConcurrentlyOnceIntoOwnSchema(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 { // three replicas starting at once
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pg.Open(ctx, dbURL, "alpha", pg.Options{MaxConns: 2})
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			errs <- pg.Migrate(ctx, pool, "alpha", migrations, log)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	pool, err := pg.Open(ctx, dbURL, "alpha", pg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Unqualified names resolve in the service's schema.
	if _, err := pool.Exec(ctx, "INSERT INTO things (id, name, note) VALUES (1, 'a', 'n')"); err != nil {
		t.Fatalf("insert into migrated table: %v", err)
	}
	_, err = pool.Exec(ctx, "INSERT INTO things (id, name) VALUES (2, 'a')")
	if !pg.IsUniqueViolation(err) {
		t.Fatalf("want unique violation, got %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM alpha.goose_db_version WHERE version_id > 0").Scan(&n); err != nil || n != 2 {
		t.Fatalf("versions recorded: %d, %v", n, err)
	}
	// Another schema sees none of it.
	other, err := pg.Open(ctx, dbURL, "beta", pg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := pg.Migrate(ctx, other, "beta", fstest.MapFS{"00001_x.sql": {Data: []byte("-- +goose Up\nCREATE TABLE beta_only (id int);\n")}}, log); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, "SELECT 1 FROM things"); err == nil {
		t.Fatal("schema beta resolved alpha's table")
	}
}

// A repeatable migration runs after the versioned ones, again only when its
// content changed.
func TestRepeatableMigrationsRunWhenChanged(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool, err := pg.Open(ctx, dbURL, "gamma", pg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	fsys := fstest.MapFS{
		"00001_init.sql": migrations["00001_init.sql"],
		// It counts its runs in things, which the versioned migration made.
		"R__count.sql": {Data: []byte("CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql RETURN 1;\n" +
			"INSERT INTO things (id, name) VALUES ((SELECT count(*) + 1 FROM things), 'run');\n")},
	}
	runs := func(want int) {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM things").Scan(&n); err != nil || n != want {
			t.Fatalf("repeatable runs: %d (%v), want %d", n, err, want)
		}
	}
	for range 2 {
		if err := pg.Migrate(ctx, pool, "gamma", fsys, log); err != nil {
			t.Fatal(err)
		}
	}
	runs(1)
	fsys["R__count.sql"] = &fstest.MapFile{Data: []byte("CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql RETURN 2;\n" +
		"INSERT INTO things (id, name) VALUES ((SELECT count(*) + 1 FROM things), 'run again');\n")}
	if err := pg.Migrate(ctx, pool, "gamma", fsys, log); err != nil {
		t.Fatal(err)
	}
	runs(2)
	var answer int
	if err := pool.QueryRow(ctx, "SELECT answer()").Scan(&answer); err != nil || answer != 2 {
		t.Fatalf("answer() = %d (%v), want the changed definition's 2", answer, err)
	}
}

func TestOpenRejectsBadSchemaName(t *testing.T) {
	if _, err := pg.Open(context.Background(), dbURL, "x; DROP", pg.Options{}); err == nil {
		t.Fatal("bad schema name accepted")
	}
}
