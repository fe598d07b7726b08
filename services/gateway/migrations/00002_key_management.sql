-- +goose Up
-- Keys managed by their owners (issue 34): who created a key, the audit log
-- of key events, and the dashboard's sign-in links and sessions.

-- created_by_key_id: the key that created this one over /v2/keys (a
-- platform key manages only the keys it created). revoked_at may lie in the
-- future: a rotated key keeps working until the end of its grace period.
ALTER TABLE api_keys ADD COLUMN created_by_key_id bigint REFERENCES api_keys (id);
CREATE INDEX api_keys_created_by_idx ON api_keys (created_by_key_id) WHERE created_by_key_id IS NOT NULL;

-- The audit log: one row per key event, with who did it (a key, a dashboard
-- user, or an operator's command) and from where.
CREATE TABLE key_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id         bigint      NOT NULL REFERENCES api_keys (id),
    space_id       bigint,
    owner_key_id   bigint,
    event          text        NOT NULL CHECK (event IN ('created', 'rotated', 'revoked')),
    actor          text        NOT NULL CHECK (actor IN ('key', 'dashboard', 'operator')),
    actor_key_id   bigint,
    actor_email    text,
    actor_ip       text,
    replacement_id bigint REFERENCES api_keys (id),
    effective_at   timestamptz NOT NULL DEFAULT now(),
    occurred_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX key_events_space_idx ON key_events (space_id, id DESC) WHERE space_id IS NOT NULL;
CREATE INDEX key_events_owner_idx ON key_events (owner_key_id, id DESC) WHERE owner_key_id IS NOT NULL;

-- Dashboard sign-in links. The link's token is derived from nonce with a
-- server secret and only its SHA-256 is kept: neither this table nor its
-- outbox holds a usable link.
CREATE TABLE dashboard_sign_ins (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email      text        NOT NULL,
    nonce      bytea       NOT NULL CHECK (length(nonce) = 16),
    token_hash bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    client_ip  text,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX dashboard_sign_ins_email_idx ON dashboard_sign_ins (email, created_at);

-- The sign-in mails still to send (libs/outbox), written with the link.
CREATE TABLE dashboard_mail_outbox (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sign_in_id  bigint      NOT NULL REFERENCES dashboard_sign_ins (id) ON DELETE CASCADE,
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    next_try_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_mail_outbox_due_idx ON dashboard_mail_outbox (next_try_at);

-- Server-side sessions: the cookie's SHA-256, revocable.
CREATE TABLE dashboard_sessions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    email      text        NOT NULL,
    csrf       bytea       NOT NULL CHECK (length(csrf) = 32),
    client_ip  text,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- +goose Down
DROP TABLE dashboard_sessions;
DROP TABLE dashboard_mail_outbox;
DROP TABLE dashboard_sign_ins;
DROP TABLE key_events;
ALTER TABLE api_keys DROP COLUMN created_by_key_id;
