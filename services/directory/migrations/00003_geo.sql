-- +goose Up
-- near=LAT,LON&radius_km=R (docs/search.md): a GiST index on each space's
-- point answers the bounding box, the great-circle distance decides. Core
-- geometric types, not earthdistance: its functions find earth() through
-- the search_path, which the services pin to their own schema.
ALTER TABLE spaces ADD COLUMN geo point GENERATED ALWAYS AS (point(longitude::float8, latitude::float8)) STORED;
CREATE INDEX spaces_confirmed_geo_idx ON spaces USING gist (geo) WHERE confirmed;

-- The haversine distance in km on the mean Earth radius (libs/geo.DistanceKm).
CREATE FUNCTION great_circle_km(lat1 float8, lon1 float8, lat2 float8, lon2 float8) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN 2 * 6371.0088 * asin(least(1, sqrt(sin(radians(lat2 - lat1) / 2) ^ 2
        + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ^ 2)));

-- +goose Down
DROP FUNCTION IF EXISTS great_circle_km(float8, float8, float8, float8);
DROP INDEX IF EXISTS spaces_confirmed_geo_idx;
ALTER TABLE spaces DROP COLUMN IF EXISTS geo;
