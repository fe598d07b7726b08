package changes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Entries are values kept beside the versions that name them (the gateway's
// shared response cache): each one holds the name it was computed under,
// and the reader compares that with the name the current versions give, so
// an entry written under old versions is never taken for a current one.
// They carry the versions' hash tag: on a Redis Cluster an entry and the
// versions it is checked against are read by one MGET (the price: the
// entries live on the versions' master).

// EntryKey is the Redis key of entry id.
func (v *Versions) EntryKey(id string) string { return v.prefix + "cv:{cv}:entry:" + id }

// Entry is one value to keep under an id for TTL.
type Entry struct {
	ID    string
	Value []byte
	TTL   time.Duration
}

// ReadEntry reads entry id alone (found false when absent).
func (v *Versions) ReadEntry(ctx context.Context, id string) (string, bool, error) {
	if v == nil {
		return "", false, ErrMissing
	}
	if err := v.ready(ctx); err != nil {
		return "", false, fmt.Errorf("read entry: %w", err)
	}
	s, err := v.rdb.Get(ctx, v.EntryKey(id)).Result()
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("read entry: %w", v.failed(ctx, err))
	}
	return s, true, nil
}

// WriteEntries sets the entries in one pipeline (one round trip on one
// Redis).
func (v *Versions) WriteEntries(ctx context.Context, es []Entry) error {
	if v == nil || len(es) == 0 {
		return nil
	}
	if err := v.ready(ctx); err != nil {
		return fmt.Errorf("write entries: %w", err)
	}
	pipe := v.rdb.Pipeline()
	for _, e := range es {
		pipe.Set(ctx, v.EntryKey(e.ID), e.Value, e.TTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("write entries: %w", v.failed(ctx, err))
	}
	return nil
}
