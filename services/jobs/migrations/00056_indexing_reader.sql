-- +goose Up
-- The index notifier becomes a reader of the event log (eventbus, issue 45):
-- it reads on from where its own dispatch position stopped, so no notice is
-- queued twice (and (url, version) is unique besides).
INSERT INTO event_readers (reader, xid, seq) SELECT 'indexing', xid, seq FROM indexing_dispatch
ON CONFLICT (reader) DO NOTHING;

-- +goose Down
DELETE FROM event_readers WHERE reader = 'indexing';
