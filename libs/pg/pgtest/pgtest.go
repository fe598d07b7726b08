// Package pgtest gives each test package its own freshly created database on
// the real local PostgreSQL, dropped when the package's tests end, so that
// packages run in parallel and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	u, err := url.Parse(BaseURL())
	if err != nil {
		return nil, fmt.Errorf("parse base url: %w", err)
	}
	u.Path = "/" + name
	return &DB{Name: name, URL: u.String()}, nil
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
