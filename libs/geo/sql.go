package geo

import _ "embed"

// SQLFile is the name of SQL's repeatable migration and SQL its text: the
// great-circle distance as a PostgreSQL function (DistanceKm in SQL), for the
// schemas that filter or sort by distance (pg.WithFiles adds it to theirs).
const SQLFile = "R__great_circle_km.sql"

//go:embed R__great_circle_km.sql
var SQL []byte
