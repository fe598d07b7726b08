-- +goose Up
-- Sign-in requests never lock an owner out (issue 44): an outstanding link
-- is mailed again rather than a new one minted (mailed_at: when its mail was
-- last queued, at most one per address per DASHBOARD_LINK_RESEND_EVERY),
-- and each client has its own hourly budget per address (the requests).
ALTER TABLE dashboard_sign_ins ADD COLUMN mailed_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX dashboard_sign_ins_outstanding_idx ON dashboard_sign_ins (email, id DESC) WHERE used_at IS NULL;

CREATE TABLE dashboard_sign_in_requests (
    email        text        NOT NULL,
    client_ip    text        NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_sign_in_requests_idx ON dashboard_sign_in_requests (email, client_ip, requested_at);

-- +goose Down
DROP TABLE dashboard_sign_in_requests;
DROP INDEX dashboard_sign_ins_outstanding_idx;
ALTER TABLE dashboard_sign_ins DROP COLUMN mailed_at;
