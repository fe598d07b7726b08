package jobdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg"
)

// The tables behind the read machinery (stores/jobcache): the writes owed
// an announcement, and each key's last write position for its replica reads.

// Owe records that the views of spaceID (0: no space's, -1: every space's)
// are owed an announcement; TakeOwed removes and returns them all.
func (s *Store) Owe(ctx context.Context, spaceID int64) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO unannounced (space_id) VALUES ($1) ON CONFLICT DO NOTHING`, spaceID); err != nil {
		return fmt.Errorf("insert unannounced: %w", err)
	}
	return nil
}

func (s *Store) TakeOwed(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `DELETE FROM unannounced RETURNING space_id`)
	if err != nil {
		return nil, fmt.Errorf("delete unannounced: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("delete unannounced: %w", err)
	}
	return ids, nil
}

// ReadAfter is how far a replica must have replayed for keyID's reads (0:
// no write recorded). Read on the primary: whichever pod took the key's
// write, its position is there once the write was answered.
func (s *Store) ReadAfter(ctx context.Context, keyID int64) (pg.LSN, error) {
	var after pg.LSN
	err := s.pool.QueryRow(ctx, `SELECT lsn FROM read_after WHERE key_id = $1`, keyID).Scan(&after)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("select read_after: %w", err)
	}
	return after, nil
}

// MarkWritten records how far a replica must have replayed for keyID's
// reads to see its writes: called after the write's commit, so the insert
// position is past its commit record.
func (s *Store) MarkWritten(ctx context.Context, keyID int64) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO read_after (key_id, lsn) VALUES ($1, `+pg.LSNSQL(`pg_current_wal_insert_lsn()`)+`)
		ON CONFLICT (key_id) DO UPDATE SET lsn = EXCLUDED.lsn`, keyID); err != nil {
		return fmt.Errorf("upsert read_after: %w", err)
	}
	return nil
}
