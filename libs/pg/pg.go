// Package pg opens the PostgreSQL pool and runs a service's embedded
// migrations inside its own schema.
package pg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Options tune the pool.
type Options struct {
	MaxConns int32
	// Tracer instruments queries (OpenTelemetry); nil for none.
	Tracer pgx.QueryTracer
	// Params are run-time settings every connection starts with unless the
	// URL sets them (beside search_path and application_name), e.g. a
	// service's work_mem.
	Params map[string]string
}

// Open connects a pool whose connections live in schema (search_path), so a
// service's SQL names only its own tables and cannot reach another's by accident.
func Open(ctx context.Context, url, schema string, opt Options) (*pgxpool.Pool, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("invalid schema name %q", schema)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	for k, v := range opt.Params {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set { // the URL's own setting wins
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = schema
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	if opt.Tracer != nil {
		cfg.ConnConfig.Tracer = opt.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}

// Migrate creates schema if needed and applies the goose migrations in fsys
// (files at its root), then its repeatable ones (RepeatablePattern). The version table lives in the schema, and a Postgres
// advisory lock keeps replicas that start together from migrating twice.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, log *slog.Logger) error {
	if !schemaName.MatchString(schema) {
		return fmt.Errorf("invalid schema name %q", schema)
	}
	// CREATE SCHEMA IF NOT EXISTS races between concurrent starters; the
	// transaction-scoped advisory lock serialises them.
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('coworkjobs.schema'))"); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit schema: %w", err)
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	store, err := database.NewStore(database.DialectPostgres, schema+".goose_db_version")
	if err != nil {
		return fmt.Errorf("goose store: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(hash(schema))))
	if err != nil {
		return fmt.Errorf("goose locker: %w", err)
	}
	p, err := goose.NewProvider("", db, fsys, goose.WithStore(store), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("goose provider: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	for _, r := range results {
		log.Info("migration applied", "schema", schema, "version", r.Source.Version, "duration", r.Duration.String())
	}
	return applyRepeatable(ctx, pool, schema, fsys, log)
}

func hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Postgres error codes the stores translate into their domain's sentinels.
const (
	CodeUniqueViolation     = "23505"
	CodeForeignKeyViolation = "23503"
	CodeCheckViolation      = "23514"
)

// ErrorCode returns the SQLSTATE of a Postgres error, or "".
func ErrorCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsUniqueViolation reports a unique constraint failure.
func IsUniqueViolation(err error) bool { return ErrorCode(err) == CodeUniqueViolation }

// IsForeignKeyViolation reports a foreign key failure.
func IsForeignKeyViolation(err error) bool { return ErrorCode(err) == CodeForeignKeyViolation }

// Check is a readiness probe for the pool.
func Check(pool *pgxpool.Pool) func(ctx context.Context) error {
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}
