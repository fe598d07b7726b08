package pg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RepeatablePattern names the repeatable migrations of a migrations folder,
// after Flyway's convention: files of CREATE OR REPLACE definitions
// (functions, views) applied after the versioned migrations whenever their
// content changed, so that the current definition of a function is one file
// to read and to edit, not the last of the versioned files that replaced it.
// A change that CREATE OR REPLACE cannot make (a new signature, a new result
// type) drops the old definition in a versioned migration first.
const RepeatablePattern = "R__*.sql"

// applyRepeatable runs fsys's repeatable migrations whose checksum differs
// from the one recorded in schema.repeatable_migrations, in one transaction
// under the schema lock (replicas starting together apply each once).
func applyRepeatable(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, log *slog.Logger) error {
	files, err := fs.Glob(fsys, RepeatablePattern)
	if err != nil || len(files) == 0 {
		return err
	}
	table := pgx.Identifier{schema, "repeatable_migrations"}.Sanitize()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('coworkjobs.schema'))"); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (name text PRIMARY KEY, checksum text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("create %s: %w", table, err)
		}
		for _, name := range files {
			body, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(body)
			checksum := hex.EncodeToString(sum[:])
			var applied string
			err = tx.QueryRow(ctx, `SELECT checksum FROM `+table+` WHERE name = $1`, name).Scan(&applied)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("read %s: %w", table, err)
			}
			if applied == checksum {
				continue
			}
			// No arguments: the simple protocol, which runs every statement of the file.
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("repeatable migration %s: %w", name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (name, checksum) VALUES ($1, $2)
				ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`, name, checksum); err != nil {
				return fmt.Errorf("record %s: %w", name, err)
			}
			log.Info("repeatable migration applied", "schema", schema, "file", name)
		}
		return nil
	})
}
