-- +goose Up
-- API keys. Only a SHA-256 of the full key is stored: the key itself is shown
-- once, at creation, and cannot be recovered.
CREATE TABLE api_keys (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                  text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prefix                text        NOT NULL CHECK (prefix IN ('svc_live_', 'svc_rstr_')),
    key_hash              bytea       NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    hint                  text        NOT NULL,
    space_id              bigint      CHECK (space_id > 0),
    scopes                text[]      NOT NULL DEFAULT '{}',
    rate_limit_per_minute integer     CHECK (rate_limit_per_minute > 0),
    trusted_importer      boolean     NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now(),
    revoked_at            timestamptz,
    last_used_at          timestamptz,
    replaced_by           bigint      REFERENCES api_keys (id)
);

CREATE INDEX api_keys_space_idx ON api_keys (space_id) WHERE space_id IS NOT NULL;

-- +goose Down
DROP TABLE api_keys;
