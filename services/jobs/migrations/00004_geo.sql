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

-- great_circle_km is a repeatable migration (libs/geo, R__great_circle_km.sql).

-- +goose Down
DROP INDEX IF EXISTS jobs_active_geo_idx;
ALTER TABLE jobs DROP COLUMN IF EXISTS geo, DROP COLUMN IF EXISTS city_country, DROP COLUMN IF EXISTS city_lon,
    DROP COLUMN IF EXISTS city_lat;
