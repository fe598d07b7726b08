// Package pgtest gives each test package its own freshly created database on
// the real local PostgreSQL, dropped when the package's tests end, so that
// packages run in parallel and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
)

// BaseURL is the server the throwaway databases are created on:
// TEST_DATABASE_URL, or the local server with trust auth.
func BaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]`)

// DB is one throwaway database.
type DB struct {
	Name string
	URL  string
}

// Create makes a database named after prefix plus a random suffix.
func Create(prefix string) (*DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return nil, fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "test_" + unsafe.ReplaceAllString(strings.ToLower(prefix), "_") + "_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	return at(name)
}

// at is the database name on the BaseURL server.
func at(name string) (*DB, error) {
	u, err := url.Parse(BaseURL())
	if err != nil {
		return nil, fmt.Errorf("parse base url: %w", err)
	}
	u.Path = "/" + name
	return &DB{Name: name, URL: u.String()}, nil
}

// Existing is a database made by Create and kept (a benchmark's data set).
func Existing(name string) (*DB, error) {
	if unsafe.MatchString(name) {
		return nil, fmt.Errorf("database %q: not a name Create makes", name)
	}
	return at(name)
}

// Drop removes the database, ending any connection still open to it.
func (d *DB) Drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)")
	return err
}

// Main is the body of a package's TestMain: it creates the database, exposes
// its URL to the tests through setURL, runs them and drops the database.
func Main(prefix string, run func() int, setURL func(string)) int {
	db, err := Create(prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	setURL(db.URL)
	code := run()
	if err := db.Drop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: drop:", err)
	}
	return code
}

// MainURL is Main for a package whose tests need only the database's URL,
// kept in *dsn while they run.
func MainURL(m *testing.M, prefix string, dsn *string) int {
	return Main(prefix, m.Run, func(u string) { *dsn = u })
}

// Schema is the part of a service's database its tests need: the schema its
// tables live in, its embedded migrations and the options of the pool the
// tests open.
type Schema struct {
	Name       string
	Migrations fs.FS
	Pool       pg.Options
}

// Migrated is a package's throwaway database with a schema's migrations
// applied, and a pool on it.
type Migrated struct {
	URL  string
	Pool *pgxpool.Pool
}

// MainMigrated is the body of the TestMain of a package whose tests share one
// migrated database: it creates the database, opens a pool with s applied,
// calls setup (nil: nothing more to prepare) and runs the tests, then closes
// the pool and drops the database. A set-up error fails the run.
func MainMigrated(m *testing.M, prefix string, s Schema, setup func(Migrated) error) int {
	var dsn string
	return Main(prefix, func() int {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pool, err := openMigrated(ctx, dsn, s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		defer pool.Close()
		if setup != nil {
			if err := setup(Migrated{URL: dsn, Pool: pool}); err != nil {
				fmt.Fprintln(os.Stderr, "pgtest: setup:", err)
				return 1
			}
		}
		return m.Run()
	}, func(u string) { dsn = u })
}

// SetPool is the setup of MainMigrated for tests that need only the pool:
// it keeps it in *pool.
func SetPool(pool **pgxpool.Pool) func(Migrated) error {
	return func(db Migrated) error {
		*pool = db.Pool
		return nil
	}
}

// Open opens a pool on the database at dsn with s applied, closed when t
// ends: for a test that wants a schema of its own in the package's database.
func Open(t testing.TB, dsn string, s Schema) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := openMigrated(ctx, dsn, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func openMigrated(ctx context.Context, dsn string, s Schema) (*pgxpool.Pool, error) {
	pool, err := pg.Open(ctx, dsn, s.Name, s.Pool)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.Name, err)
	}
	if err := pg.Migrate(ctx, pool, s.Name, s.Migrations, slog.New(slog.DiscardHandler)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate %s: %w", s.Name, err)
	}
	return pool, nil
}
