-- +goose Up
-- The mails telling an endpoint's owner it was disabled (libs/outbox),
-- written in the transaction that disables it, so a mail server away at
-- that moment delays the mail instead of losing it. The address, URL and
-- reason are copied: the endpoint may be edited, re-enabled or deleted
-- before the mail goes.
CREATE TABLE webhook_mail_outbox (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id bigint      NOT NULL,
    email       text        NOT NULL,
    url         text        NOT NULL,
    reason      text        NOT NULL,
    attempts    integer     NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    next_try_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_mail_outbox_due_idx ON webhook_mail_outbox (next_try_at);

-- +goose Down
DROP TABLE IF EXISTS webhook_mail_outbox;
