-- +goose Up
-- The directory schema: placeholder so the service migrates from its first start.
CREATE TABLE IF NOT EXISTS schema_info (id int PRIMARY KEY, note text NOT NULL);

-- +goose Down
DROP TABLE IF EXISTS schema_info;
