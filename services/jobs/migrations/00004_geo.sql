-- +goose Up
-- near=LAT,LON&radius_km=R on GET /v2/jobs (docs/search.md): each job carries
-- its city's coordinates (copied from the directory with its name), a GiST
-- index on their point answers the bounding box, the great-circle distance
-- decides. Core geometric types, not earthdistance (whose functions find
-- earth() through the search_path the services pin to their own schema).
-- Jobs written before this have no coordinates until `jobs-admin backfill-geo`.
ALTER TABLE jobs
    ADD COLUMN city_lat float8,
    ADD COLUMN city_lon float8,
    -- the city's ISO 3166-1 country, for the job page's JobPosting
    ADD COLUMN city_country text,
    ADD COLUMN geo point GENERATED ALWAYS AS (point(city_lon, city_lat)) STORED;
CREATE INDEX jobs_active_geo_idx ON jobs USING gist (geo) WHERE status = 'active';

-- The haversine distance in km on the mean Earth radius (libs/geo.DistanceKm).
CREATE FUNCTION great_circle_km(lat1 float8, lon1 float8, lat2 float8, lon2 float8) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN 2 * 6371.0088 * asin(least(1, sqrt(sin(radians(lat2 - lat1) / 2) ^ 2
        + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ^ 2)));

-- +goose Down
DROP FUNCTION IF EXISTS great_circle_km(float8, float8, float8, float8);
DROP INDEX IF EXISTS jobs_active_geo_idx;
ALTER TABLE jobs DROP COLUMN IF EXISTS geo, DROP COLUMN IF EXISTS city_country, DROP COLUMN IF EXISTS city_lon,
    DROP COLUMN IF EXISTS city_lat;
