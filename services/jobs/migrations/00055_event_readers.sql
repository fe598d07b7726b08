-- +goose Up
-- One event log, many readers (issue 45): each downstream reader of
-- job_events keeps its own position here, (xid, seq) as the changes feed
-- reads them, with the lease of the one runner allowed to move it. token
-- is the lease's fence: every claim bumps it, and a position moves only
-- under the token its runner claimed, so a runner presumed dead and
-- replaced cannot move it back or forth. paused_until is a failing
-- reader's back-off: it holds that reader only.
CREATE TABLE event_readers (
    reader       text        PRIMARY KEY,
    xid          xid8        NOT NULL,
    seq          bigint      NOT NULL,
    token        bigint      NOT NULL DEFAULT 0,
    owner        text,
    lease_until  timestamptz,
    failures     integer     NOT NULL DEFAULT 0,
    paused_until timestamptz,
    last_error   text,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Upgrade path from the shared dispatch (a row per (endpoint, event)): each
-- endpoint reads on from where the dispatch stopped, so an event the
-- dispatch had fanned out is never read again (no duplicate), and the rows
-- it left pending stay as they are, now retry rows that the endpoint's
-- pump delivers before any later event of their job (order kept).
-- TestUpgradeKeepsOpenDeliveries.
INSERT INTO event_readers (reader, xid, seq)
SELECT 'webhook:' || w.id, d.xid, d.seq FROM webhook_endpoints w, webhook_dispatch d
ON CONFLICT (reader) DO NOTHING;
-- The leases move to the readers.
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS pump_until, DROP COLUMN IF EXISTS pump_owner;

-- +goose Down
ALTER TABLE webhook_endpoints ADD COLUMN pump_until timestamptz, ADD COLUMN pump_owner text;
DROP TABLE IF EXISTS event_readers;
