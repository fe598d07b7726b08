-- +goose Up
-- When the public set of jobs last changed (the feeds' and sitemaps'
-- Last-Modified) is max(updated_at): one index probe instead of a scan.
CREATE INDEX jobs_updated_at_idx ON jobs (updated_at);
-- The sitemaps and aggregator feeds walk the active jobs in id order.
CREATE INDEX jobs_active_id_idx ON jobs (id) WHERE status = 'active';

-- +goose Down
DROP INDEX jobs_active_id_idx;
DROP INDEX jobs_updated_at_idx;
