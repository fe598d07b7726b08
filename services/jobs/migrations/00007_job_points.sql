-- +goose Up
-- The first page of a listing near a point without sorting every job in the
-- circle (docs/search.md, "The first page"): a job's point is its city's, so
-- the jobs sort by distance point by point. job_points lists every point
-- jobs ever had (kept by a trigger; it only grows: a point no active job has
-- any more only costs an empty probe), for the listing to take the points in
-- the circle by distance and each point's newest jobs (jobs_active_city_idx).
CREATE TABLE job_points (
    city_slug text   NOT NULL,
    lat       float8 NOT NULL,
    lon       float8 NOT NULL,
    geo       point GENERATED ALWAYS AS (point(lon, lat)) STORED,
    PRIMARY KEY (city_slug, lat, lon)
);
CREATE INDEX job_points_geo_idx ON job_points USING gist (geo);

-- +goose StatementBegin
CREATE FUNCTION collect_job_point() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_points (city_slug, lat, lon) VALUES (NEW.city_slug, NEW.city_lat, NEW.city_lon)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER jobs_job_points AFTER INSERT OR UPDATE OF city_slug, city_lat, city_lon ON jobs
    FOR EACH ROW WHEN (NEW.city_lat IS NOT NULL AND NEW.city_lon IS NOT NULL) EXECUTE FUNCTION collect_job_point();

INSERT INTO job_points (city_slug, lat, lon)
SELECT DISTINCT city_slug, city_lat, city_lon FROM jobs WHERE city_lat IS NOT NULL AND city_lon IS NOT NULL
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TRIGGER IF EXISTS jobs_job_points ON jobs;
DROP FUNCTION IF EXISTS collect_job_point();
DROP TABLE IF EXISTS job_points;
