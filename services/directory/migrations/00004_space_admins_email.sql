-- +goose Up
-- The dashboard signs admins in by address: look them up without regard to case.
CREATE INDEX space_admins_email_idx ON space_admins (lower(email));

-- +goose Down
DROP INDEX space_admins_email_idx;
