-- +goose Up
-- The alert matcher becomes a reader of the event log (eventbus, issue 45):
-- it reads on from where its own dispatch position stopped (and a match is
-- recorded once, ever, besides).
INSERT INTO event_readers (reader, xid, seq) SELECT 'alerts', xid, seq FROM alert_dispatch
ON CONFLICT (reader) DO NOTHING;

-- +goose Down
DELETE FROM event_readers WHERE reader = 'alerts';
