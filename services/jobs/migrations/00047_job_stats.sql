-- +goose Up
-- Job statistics (issue 47, docs/privacy.md "Job statistics"): what the
-- server counted of each job's views, apply clicks (GET /go/{job_ref}) and
-- impressions, by channel. Days are UTC days. Nothing here identifies a
-- person: no IP address, no user agent; a visitor is a keyed hash of the
-- two whose key rotates every UTC day and is never stored
-- (statsbus.Visitors), and even that hash is erased once its day is closed
-- (stats_events.visitor nulled, stats_visitors deleted; statsbus.Purge).
-- TestStatsSchemaStoresNoPerson walks these columns.

-- Raw events, kept STATS_RAW_RETENTION (30 days by default). kind: 1 view,
-- 2 apply click, 3 impression; agent: 0 a browser, 1 a known crawler, 2 no
-- user agent. n > 1 for impressions coalesced in one batch.
CREATE TABLE stats_events (
    job_id  bigint      NOT NULL,
    kind    smallint    NOT NULL CHECK (kind IN (1, 2, 3)),
    channel text        NOT NULL CHECK (char_length(channel) BETWEEN 1 AND 64),
    day     date        NOT NULL,
    at      timestamptz NOT NULL,
    agent   smallint    NOT NULL CHECK (agent IN (0, 1, 2)),
    visitor bigint,
    n       integer     NOT NULL DEFAULT 1 CHECK (n > 0)
);
CREATE INDEX stats_events_day_idx ON stats_events (day);

-- The visitors seen on a day (per job, kind and channel; channel '' is any
-- channel), so that a batch knows which of its visitors are new: the daily
-- uniques. Deleted once the day is closed (the next UTC day but one).
CREATE TABLE stats_visitors (
    job_id  bigint   NOT NULL,
    day     date     NOT NULL,
    kind    smallint NOT NULL,
    channel text     NOT NULL,
    visitor bigint   NOT NULL,
    PRIMARY KEY (job_id, day, kind, channel, visitor)
);

-- The roll-ups, kept for ever: per job, UTC day, channel, kind and agent,
-- the events and the day's unique visitors (browsers only). Channel '' holds
-- the uniques over every channel (its events are 0).
CREATE TABLE stats_daily (
    job_id  bigint   NOT NULL,
    day     date     NOT NULL,
    channel text     NOT NULL,
    kind    smallint NOT NULL CHECK (kind IN (1, 2, 3)),
    agent   smallint NOT NULL CHECK (agent IN (0, 1, 2)),
    events  bigint   NOT NULL DEFAULT 0,
    uniques bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, day, channel, kind, agent)
);

-- +goose Down
DROP TABLE stats_daily;
DROP TABLE stats_visitors;
DROP TABLE stats_events;
