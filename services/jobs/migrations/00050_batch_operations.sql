-- +goose Up
-- Batches of more than 100 jobs (issue 46), kept when received and applied
-- 100 rows a transaction by the jobs API's runner (jobbus.RunBatchOps):
-- next_row and results move with each chunk's commit. Kept 30 days.
CREATE TABLE batch_operations (
    id            text        PRIMARY KEY,
    key_id        bigint      NOT NULL,
    space_id      bigint      NOT NULL,
    trusted       boolean     NOT NULL,
    mode          text        NOT NULL CHECK (mode IN ('upsert', 'replace')),
    confirm_empty boolean     NOT NULL,
    rows          jsonb       NOT NULL,
    next_row      integer     NOT NULL DEFAULT 0,
    results       jsonb       NOT NULL DEFAULT '[]',
    status        text        NOT NULL CHECK (status IN ('pending', 'done')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    done_at       timestamptz
);
CREATE INDEX batch_operations_pending_idx ON batch_operations (created_at) WHERE status = 'pending';
CREATE INDEX batch_operations_created_idx ON batch_operations (created_at);

-- +goose Down
DROP TABLE batch_operations;
