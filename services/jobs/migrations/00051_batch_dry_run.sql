-- +goose Up
-- A dry run of more than 100 jobs (issue 46) is an operation too: the
-- runner applies all its rows in one transaction it rolls back, and keeps
-- only the results.
ALTER TABLE batch_operations ADD COLUMN dry_run boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE batch_operations DROP COLUMN dry_run;
