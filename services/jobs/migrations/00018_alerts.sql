-- +goose Up
-- Job alerts (issue 36): a saved GET /v2/jobs search, confirmed by its
-- address's click, matched against each job that becomes visible.
CREATE TABLE alerts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email        text        NOT NULL,
    -- the search in GET /v2/jobs's query grammar, canonical (keys sorted):
    -- asking again for one address and search is the same alert
    search       text        NOT NULL,
    -- The percolation key: the search's most selective criterion
    -- ('city:lisbon', else 'tag:go', else '' for any job); a job is
    -- compared only with the alerts of its own keys and of ''.
    pkey         text        NOT NULL DEFAULT '',
    frequency    text        NOT NULL CHECK (frequency IN ('instant', 'daily', 'weekly')),
    time_zone    text        NOT NULL DEFAULT 'UTC',
    -- The alert's links are HMACs of (purpose, id, nonce): none is stored,
    -- and a new nonce voids the old ones.
    nonce        text        NOT NULL,
    confirmed_at timestamptz,
    paused       boolean     NOT NULL DEFAULT false,
    -- the platform key that created it (0: the public form)
    key_id       bigint      NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (email, search)
);
CREATE INDEX alerts_pkey_idx ON alerts (pkey) WHERE confirmed_at IS NOT NULL AND NOT paused;
-- the purge of alerts unconfirmed after 48 h
CREATE INDEX alerts_unconfirmed_idx ON alerts (created_at) WHERE confirmed_at IS NULL;

-- One row per (alert, job) ever matched, written before any mail about it
-- is handed over: the pair is never mailed twice, whatever happens to the
-- job (pause, relist) or the worker.
CREATE TABLE alert_matches (
    alert_id   bigint      NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
    job_id     bigint      NOT NULL,
    matched_at timestamptz NOT NULL DEFAULT now(),
    -- when a digest took it (instant matches go at once through the outbox)
    sent_at    timestamptz,
    PRIMARY KEY (alert_id, job_id)
);
CREATE INDEX alert_matches_unsent_idx ON alert_matches (alert_id) WHERE sent_at IS NULL;

-- Mails waiting for SMTP (libs/outbox): a confirmation or an instant match.
CREATE TABLE alert_outbox (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_id    bigint      NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('confirm', 'match')),
    job_id      bigint      NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    attempts    integer     NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    last_error  text
);
CREATE INDEX alert_outbox_next_try_idx ON alert_outbox (next_try_at);

-- How far matching has read job_events (one row, as webhook_dispatch).
CREATE TABLE alert_dispatch (
    one bigint PRIMARY KEY DEFAULT 1 CHECK (one = 1),
    xid xid8   NOT NULL,
    seq bigint NOT NULL
);
INSERT INTO alert_dispatch (xid, seq) VALUES ('0', 0);

-- +goose Down
DROP TABLE IF EXISTS alert_dispatch;
DROP TABLE IF EXISTS alert_outbox;
DROP TABLE IF EXISTS alert_matches;
DROP TABLE IF EXISTS alerts;
