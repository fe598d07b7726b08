-- +goose Up
-- Feed-pull import (issue 46): the sources an importer (a key without a
-- space) or a space registered, polled by Temporal (workflows/importsync)
-- with a conditional GET, each poll applied as a replace scoped to the
-- source; the owner is the registering key's space (space_id) or, for a key
-- without one, the key (space_id 0, key_id), as a batch's jobs are owned.
CREATE TABLE import_sources (
    id               bigserial   PRIMARY KEY,
    space_id         bigint      NOT NULL DEFAULT 0,
    key_id           bigint      NOT NULL,
    trusted          boolean     NOT NULL DEFAULT false,
    kind             text        NOT NULL CHECK (kind IN ('greenhouse', 'lever', 'ashby', 'personio', 'json')),
    token            text        NOT NULL DEFAULT '',
    url              text        NOT NULL DEFAULT '',
    -- feed_url is what is fetched: url, or the kind's API for token.
    feed_url         text        NOT NULL,
    company          text        NOT NULL DEFAULT '',
    city_name        text        NOT NULL DEFAULT '',
    tags             text        NOT NULL DEFAULT '',
    interval_seconds integer     NOT NULL CHECK (interval_seconds >= 900),
    mode             text        NOT NULL DEFAULT 'replace' CHECK (mode = 'replace'),
    -- The validators of the last answer applied, sent back on the next GET.
    etag             text        NOT NULL DEFAULT '',
    last_modified    text        NOT NULL DEFAULT '',
    next_poll_at     timestamptz NOT NULL DEFAULT now(),
    last_polled_at   timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX import_sources_owner_idx ON import_sources (space_id, key_id, id);

-- One poll of a source: its counts and the rows' errors ([{"index", "ref",
-- "errors"}]); not_modified is a 304 (zero writes).
CREATE TABLE import_runs (
    id           bigserial   PRIMARY KEY,
    source_id    bigint      NOT NULL REFERENCES import_sources (id) ON DELETE CASCADE,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    not_modified boolean     NOT NULL DEFAULT false,
    positions    integer     NOT NULL DEFAULT 0,
    created      integer     NOT NULL DEFAULT 0,
    updated      integer     NOT NULL DEFAULT 0,
    unchanged    integer     NOT NULL DEFAULT 0,
    closed       integer     NOT NULL DEFAULT 0,
    errors       integer     NOT NULL DEFAULT 0,
    row_errors   jsonb       NOT NULL DEFAULT '[]',
    error        text
);
CREATE INDEX import_runs_source_idx ON import_runs (source_id, id DESC);

-- The wake-ups the API owes the sources' workflows (a creation, a sync, a
-- deletion), written in the change's transaction and relayed to Temporal by
-- jobs-worker (libs/outbox), so none is lost while Temporal is away.
CREATE TABLE import_wakes (
    id         bigserial   PRIMARY KEY,
    source_id  bigint      NOT NULL,
    due_at     timestamptz NOT NULL DEFAULT now(),
    attempts   integer     NOT NULL DEFAULT 0,
    last_error text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX import_wakes_due_idx ON import_wakes (due_at, id);

-- +goose Down
DROP TABLE import_wakes;
DROP TABLE import_runs;
DROP TABLE import_sources;
