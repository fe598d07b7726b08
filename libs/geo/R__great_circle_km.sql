-- The haversine distance in km on the mean Earth radius, as geo.DistanceKm
-- computes it in Go: the one definition of every schema that needs it in SQL
-- (a repeatable migration, libs/pg.RepeatablePattern).
CREATE OR REPLACE FUNCTION great_circle_km(lat1 float8, lon1 float8, lat2 float8, lon2 float8) RETURNS float8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN 2 * 6371.0088 * asin(least(1, sqrt(sin(radians(lat2 - lat1) / 2) ^ 2
        + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ^ 2)));
