-- +goose Up
-- Issue 36, privacy: an alert's address is stored once (docs/privacy.md).
-- The alerts reference it; deleting the last alert of an address deletes
-- the address (alertdb), and erasure deletes both.
CREATE TABLE alert_addresses (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email text   NOT NULL UNIQUE -- normalised: trimmed, lower case
);

-- Existing rows: addresses are lower-cased by the route already; any two
-- alerts of one search under two spellings of one address become one.
DELETE FROM alerts a USING alerts b
WHERE lower(btrim(a.email)) = lower(btrim(b.email)) AND a.search = b.search AND a.id > b.id;
INSERT INTO alert_addresses (email) SELECT DISTINCT lower(btrim(email)) FROM alerts;
ALTER TABLE alerts ADD COLUMN address_id bigint;
UPDATE alerts a SET address_id = aa.id FROM alert_addresses aa WHERE aa.email = lower(btrim(a.email));
-- No cascade: an address row goes only once no alert holds it, so a
-- concurrent Save's new alert fails the delete instead of vanishing with it.
ALTER TABLE alerts ALTER COLUMN address_id SET NOT NULL,
    ADD CONSTRAINT alerts_address_fk FOREIGN KEY (address_id) REFERENCES alert_addresses (id),
    DROP CONSTRAINT alerts_email_search_key,
    ADD CONSTRAINT alerts_address_search_key UNIQUE (address_id, search),
    DROP COLUMN email;

-- The erasures this service still has to hand to community (the newsletter's
-- subscriber): libs/outbox, retried while community is away. The row keeps
-- the sealed erasure token (libs/privacy), never the address in clear.
CREATE TABLE privacy_outbox (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token       text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    attempts    integer     NOT NULL DEFAULT 0,
    next_try_at timestamptz NOT NULL DEFAULT now(),
    last_error  text
);
CREATE INDEX privacy_outbox_next_try_idx ON privacy_outbox (next_try_at);

-- +goose Down
DROP TABLE IF EXISTS privacy_outbox;
ALTER TABLE alerts ADD COLUMN email text;
UPDATE alerts a SET email = aa.email FROM alert_addresses aa WHERE aa.id = a.address_id;
ALTER TABLE alerts ALTER COLUMN email SET NOT NULL,
    DROP CONSTRAINT alerts_address_search_key,
    ADD CONSTRAINT alerts_email_search_key UNIQUE (email, search),
    DROP COLUMN address_id;
DROP TABLE IF EXISTS alert_addresses;
