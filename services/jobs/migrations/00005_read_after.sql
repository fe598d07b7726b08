-- +goose Up
-- Read-your-writes with DATABASE_READ_URL (docs/scaling.md, Read replicas):
-- the primary's WAL position just after each key's last write, so that any
-- jobs pod sends that key's reads to the replica only once it has replayed
-- that far. One row per key that ever wrote.
CREATE TABLE read_after (
    key_id bigint PRIMARY KEY,
    lsn    bigint NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS read_after;
