-- +goose Up
-- Writes committed whose change versions could not be bumped (Redis away):
-- the views of these spaces (0: no space, -1: any) are owed an announcement.
-- The next write, replay or unchanged re-post that reads a row here bumps
-- them before it answers, so a replay or an unchanged re-post needs no bump
-- of its own when nothing is owed.
CREATE TABLE unannounced (
    space_id bigint      PRIMARY KEY,
    since    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS unannounced;
