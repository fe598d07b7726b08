-- +goose Up
-- The job's whole life (docs/job-lifecycle.md): pause with a stopped expiry
-- clock, payments recorded once per provider reference, plan currencies, the
-- edit capability looked up by its digest, and outbox rows of several kinds.

ALTER TABLE plans ADD COLUMN currency text NOT NULL DEFAULT 'EUR' CHECK (currency IN ('EUR', 'USD', 'GBP'));

ALTER TABLE jobs
    -- set while paused: resume moves expiration_date by the time spent paused
    ADD COLUMN paused_at timestamptz,
    ADD COLUMN paid_at   timestamptz,
    -- The edit link's hash is a capability: it is found through its SHA-256,
    -- so an index probe never compares the secret itself byte by byte. (The
    -- cast to bytea is the immutable way to its bytes; a backslash, which it
    -- would read as an escape, is doubled.)
    ADD COLUMN hash_digest bytea GENERATED ALWAYS AS (sha256(replace(hash_identifier, '\', '\\')::bytea)) STORED;
CREATE UNIQUE INDEX jobs_hash_digest_key ON jobs (hash_digest);

-- One row per payment; a provider's replayed notification finds its row.
CREATE TABLE payments (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     bigint      NOT NULL REFERENCES jobs (id),
    provider   text        NOT NULL,
    reference  text        NOT NULL,
    amount     bigint      NOT NULL CHECK (amount >= 0),
    currency   text        NOT NULL,
    -- what the payment did to the job: the event's action (published, relisted, paid, ...)
    action     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, reference)
);
CREATE INDEX payments_job_idx ON payments (job_id);

-- 'expiry' moves the job's Temporal timer; 'created_mail' mails the poster.
ALTER TABLE expiry_outbox ADD COLUMN kind text NOT NULL DEFAULT 'expiry' CHECK (kind IN ('expiry', 'created_mail'));

-- +goose Down
ALTER TABLE expiry_outbox DROP COLUMN kind;
DROP TABLE IF EXISTS payments;
DROP INDEX IF EXISTS jobs_hash_digest_key;
ALTER TABLE jobs DROP COLUMN hash_digest, DROP COLUMN paid_at, DROP COLUMN paused_at;
ALTER TABLE plans DROP COLUMN currency;
