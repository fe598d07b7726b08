-- +goose Up
-- Webhook endpoints, their deliveries (the log GET .../deliveries shows),
-- the outbox that hands deliveries to Temporal, and the dispatch position
-- in job_events.

CREATE TABLE webhook_endpoints (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- the owner: a space (its keys manage it), or with space_id 0 the key itself
    space_id         bigint      NOT NULL DEFAULT 0,
    key_id           bigint      NOT NULL,
    url              text        NOT NULL,
    description      text        NOT NULL DEFAULT '',
    events           text[]      NOT NULL,
    email            text,
    -- Kept as is: every delivery is signed with it. The secret replaced by a
    -- rotation signs alongside until old_secret_until.
    secret           text        NOT NULL,
    old_secret       text,
    old_secret_until timestamptz,
    enabled          boolean     NOT NULL DEFAULT true,
    disabled_reason  text,
    failing_since    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_owner_idx ON webhook_endpoints (space_id, key_id);

CREATE TABLE webhook_deliveries (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id      bigint      NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    -- the job event delivered (NULL for a ping); msg_id is the webhook-id
    -- header, the same for a redelivery of one message
    event_id         uuid,
    msg_id           text        NOT NULL,
    type             text        NOT NULL,
    job_id           bigint      NOT NULL DEFAULT 0,
    version          bigint      NOT NULL DEFAULT 0,
    occurred_at      timestamptz NOT NULL,
    -- a redelivery or a recovery asked for by the owner (not the dispatch's)
    replay           boolean     NOT NULL DEFAULT false,
    status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
    attempts         integer     NOT NULL DEFAULT 0,
    response_status  integer,
    response_body    text,
    latency_ms       integer,
    last_error       text,
    next_try_at      timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
-- the dispatch of an event to an endpoint happens once, however often it runs
CREATE UNIQUE INDEX webhook_deliveries_event_key ON webhook_deliveries (endpoint_id, event_id) WHERE NOT replay;
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id DESC);

-- Deliveries written with their rows; the relay in jobs-worker signals each
-- to its (endpoint, job) workflow and deletes it.
CREATE TABLE webhook_outbox (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id bigint      NOT NULL,
    endpoint_id bigint      NOT NULL,
    job_id      bigint      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    attempts    integer     NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    last_error  text
);
CREATE INDEX webhook_outbox_next_try_idx ON webhook_outbox (next_try_at);

-- How far the dispatch has fanned job_events out to the endpoints (one row).
CREATE TABLE webhook_dispatch (
    one bigint PRIMARY KEY DEFAULT 1 CHECK (one = 1),
    xid xid8   NOT NULL,
    seq bigint NOT NULL
);
INSERT INTO webhook_dispatch (xid, seq) VALUES ('0', 0);

-- +goose Down
DROP TABLE IF EXISTS webhook_dispatch;
DROP TABLE IF EXISTS webhook_outbox;
DROP TABLE IF EXISTS webhook_deliveries;
DROP TABLE IF EXISTS webhook_endpoints;
