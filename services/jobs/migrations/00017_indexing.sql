-- +goose Up
-- Search-engine notices (Google's Indexing API): one row per (url,
-- version), read from job_events past their own position, sent in batches
-- by jobs-worker within a daily quota.

CREATE TABLE indexing_notices (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint      NOT NULL,
    url         text        NOT NULL,
    version     bigint      NOT NULL,
    type        text        NOT NULL CHECK (type IN ('URL_UPDATED', 'URL_DELETED')),
    status      text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz
);
-- never twice for one URL and version, however often the dispatch runs
CREATE UNIQUE INDEX indexing_notices_url_version_key ON indexing_notices (url, version);
CREATE INDEX indexing_notices_due_idx ON indexing_notices (next_try_at) WHERE status = 'pending';
-- the distribution record: a job's latest notice
CREATE INDEX indexing_notices_job_idx ON indexing_notices (job_id, id DESC);

-- Notices sent per day (the quota's day, UTC), one row a day.
CREATE TABLE indexing_quota (
    day  date    PRIMARY KEY,
    used integer NOT NULL DEFAULT 0
);

-- How far the notices have read job_events (one row, as webhook_dispatch).
CREATE TABLE indexing_dispatch (
    one bigint PRIMARY KEY DEFAULT 1 CHECK (one = 1),
    xid xid8   NOT NULL,
    seq bigint NOT NULL
);
INSERT INTO indexing_dispatch (xid, seq) VALUES ('0', 0);

-- +goose Down
DROP TABLE IF EXISTS indexing_dispatch;
DROP TABLE IF EXISTS indexing_quota;
DROP TABLE IF EXISTS indexing_notices;
