-- +goose Up
-- Confirmation mails are per address, not per search (issue 44): at most one
-- waits in the outbox for an address, at least ALERT_CONFIRM_EVERY apart
-- (confirm_due_at: when the last one was due), at most
-- ALERT_CONFIRMS_PER_DAY a UTC day (confirm_day, confirm_count).
ALTER TABLE alert_addresses
    ADD COLUMN confirm_due_at timestamptz,
    ADD COLUMN confirm_day    date,
    ADD COLUMN confirm_count  integer NOT NULL DEFAULT 0;
CREATE INDEX alert_outbox_alert_idx ON alert_outbox (alert_id) WHERE kind = 'confirm';
CREATE INDEX alerts_pending_idx ON alerts (address_id, id) WHERE confirmed_at IS NULL;

-- +goose Down
DROP INDEX alerts_pending_idx;
DROP INDEX alert_outbox_alert_idx;
ALTER TABLE alert_addresses DROP COLUMN confirm_due_at, DROP COLUMN confirm_day, DROP COLUMN confirm_count;
