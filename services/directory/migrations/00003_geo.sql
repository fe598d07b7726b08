-- +goose Up
-- near=LAT,LON&radius_km=R (docs/search.md): a GiST index on each space's
-- point answers the bounding box, the great-circle distance decides. Core
-- geometric types, not earthdistance: its functions find earth() through
-- the search_path, which the services pin to their own schema.
ALTER TABLE spaces ADD COLUMN geo point GENERATED ALWAYS AS (point(longitude::float8, latitude::float8)) STORED;
CREATE INDEX spaces_confirmed_geo_idx ON spaces USING gist (geo) WHERE confirmed;

-- great_circle_km is a repeatable migration (libs/geo, R__great_circle_km.sql).

-- +goose Down
DROP INDEX IF EXISTS spaces_confirmed_geo_idx;
ALTER TABLE spaces DROP COLUMN IF EXISTS geo;
