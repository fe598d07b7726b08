-- +goose Up
-- The audit log records rotations refused because the caller could not
-- create the key it asked to renew (issue 44).
ALTER TABLE key_events DROP CONSTRAINT key_events_event_check;
ALTER TABLE key_events ADD CONSTRAINT key_events_event_check
    CHECK (event IN ('created', 'rotated', 'revoked', 'rotate_refused'));

-- +goose Down
DELETE FROM key_events WHERE event = 'rotate_refused';
ALTER TABLE key_events DROP CONSTRAINT key_events_event_check;
ALTER TABLE key_events ADD CONSTRAINT key_events_event_check CHECK (event IN ('created', 'rotated', 'revoked'));
