-- +goose Up
-- Every change of a job, written by the statement that makes it (the
-- outbox of webhooks and the changes feed): none lost, none invented.
-- version counts a job's changes, so a receiver can order and de-duplicate
-- what it hears about one job.
ALTER TABLE jobs ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE TABLE job_events (
    -- order within one transaction, and the tie-break of the feed's cursor
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          uuid        NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    -- The writing transaction: a sequence alone commits out of order, so
    -- readers take only rows of transactions older than every one still
    -- running (pg_snapshot_xmin), in (xid, seq) order (jobdb/events.go).
    xid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    job_id      bigint      NOT NULL,
    type        text        NOT NULL CHECK (type IN ('job.created', 'job.updated', 'job.published', 'job.paused',
                            'job.resumed', 'job.unpublished', 'job.expired', 'job.relisted', 'job.closed', 'job.paid')),
    version     bigint      NOT NULL,
    -- the job's status after and before the change ('' before a creation),
    -- and its owner: who may hear of it without reading the job
    status      text        NOT NULL,
    prev_status text        NOT NULL,
    space_id    bigint      NOT NULL,
    key_id      bigint      NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_events_xid_idx ON job_events (xid, seq);
-- a time as the feed's start, and the purge of rows past the retention
CREATE INDEX job_events_occurred_idx ON job_events (occurred_at);

-- Who hears of an event without reading its job (jobbus.Audience.Hears):
-- a space's keys and endpoints their space's jobs; a key without a space
-- (or its endpoints) the jobs it created and every job publicly listed
-- before or after the change. One definition for the feed and the webhooks.
CREATE FUNCTION event_heard(a_space bigint, a_key bigint, e_space bigint, e_key bigint, e_status text, e_prev text)
RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN a_space <> 0 THEN e_space = a_space
            ELSE e_key = a_key OR e_status = 'active' OR e_prev = 'active' END;

-- +goose Down
DROP FUNCTION IF EXISTS event_heard;
DROP TABLE IF EXISTS job_events;
ALTER TABLE jobs DROP COLUMN IF EXISTS version;
