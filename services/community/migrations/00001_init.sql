-- +goose Up
-- Events: what GET /v2/events and the events feed read. City and space facts are
-- copied from the directory service so that listing touches one table.
CREATE TABLE events (
    id               bigserial PRIMARY KEY,
    slug             text        NOT NULL UNIQUE,
    title            text        NOT NULL,
    summary          text        NOT NULL DEFAULT '',
    description      text        NOT NULL DEFAULT '',
    starts_at        timestamptz NOT NULL,
    ends_at          timestamptz NOT NULL,
    timezone         text        NOT NULL,
    is_online        boolean     NOT NULL DEFAULT false,
    online_url       text,
    venue_name       text,
    venue_address    text,
    city_name        text,
    city_slug        text,
    space_id         bigint,
    space_name       text,
    registration_url text,
    is_free          boolean     NOT NULL DEFAULT true,
    tags             text[]      NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_time_order CHECK (ends_at >= starts_at),
    CONSTRAINT events_place CHECK (is_online OR venue_name IS NOT NULL)
);
CREATE INDEX events_ends_at_idx ON events (ends_at, starts_at);
CREATE INDEX events_space_idx ON events (space_id, ends_at) WHERE space_id IS NOT NULL;
CREATE INDEX events_city_idx ON events (city_slug, ends_at) WHERE city_slug IS NOT NULL;

-- Feedback sent through POST /v2/feedback.
CREATE TABLE feedback (
    id         bigserial PRIMARY KEY,
    message    text        NOT NULL,
    email      text,
    url        text,
    category   text        NOT NULL,
    client_ip  text,
    user_agent text,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Newsletter subscribers with their consent evidence. One row per address:
-- the unique email makes a second subscription impossible, not merely unlikely.
CREATE TABLE subscribers (
    id                bigserial PRIMARY KEY,
    email             text        NOT NULL UNIQUE,
    name              text,
    source            text,
    status            text        NOT NULL CHECK (status IN ('pending', 'subscribed', 'unsubscribed')),
    consent_at        timestamptz NOT NULL,
    consent_ip        text,
    consent_version   text        NOT NULL,
    mail_requested_at timestamptz NOT NULL,
    request_seq       integer     NOT NULL DEFAULT 1,
    mail_sent_at      timestamptz,
    mails_sent        integer     NOT NULL DEFAULT 0,
    confirmed_at      timestamptz,
    unsubscribed_at   timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Transactional outbox: a row written with the subscriber change, relayed to
-- Temporal by the worker, so a subscription survives Temporal being down.
CREATE TABLE newsletter_outbox (
    id              bigserial PRIMARY KEY,
    kind            text        NOT NULL CHECK (kind IN ('request_mail', 'confirmed')),
    subscriber_id   bigint      NOT NULL,
    email           text        NOT NULL,
    request_seq     integer     NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX newsletter_outbox_due_idx ON newsletter_outbox (next_attempt_at, id);

-- +goose Down
DROP TABLE IF EXISTS newsletter_outbox;
DROP TABLE IF EXISTS subscribers;
DROP TABLE IF EXISTS feedback;
DROP TABLE IF EXISTS events;
