-- +goose Up
-- Webhook deliveries are taken per endpoint by one heartbeating activity
-- (workflows/webhook's pump) that reads the due ones from here instead of
-- Temporal scheduling each attempt. pump_until is the running pump's lease:
-- while it lasts the dispatch queues no wake-up for the endpoint (the pump
-- polls for its new deliveries itself).
-- pump_owner names the pump holding it: a pump that Temporal presumed dead
-- and ran again elsewhere finds the lease taken and stops.
ALTER TABLE webhook_endpoints ADD COLUMN pump_until timestamptz, ADD COLUMN pump_owner text;
-- The pump reads an endpoint's pending deliveries oldest first and keeps
-- those with no older pending one of their job.
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (endpoint_id, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_job_idx ON webhook_deliveries (endpoint_id, job_id, id) WHERE status = 'pending';

-- +goose Down
DROP INDEX IF EXISTS webhook_deliveries_pending_job_idx;
DROP INDEX IF EXISTS webhook_deliveries_pending_idx;
ALTER TABLE webhook_endpoints DROP COLUMN IF EXISTS pump_owner, DROP COLUMN IF EXISTS pump_until;
