// Package dirdb is the PostgreSQL store of the directory (schema directory).
// Coordinates are read as numeric text, so what is stored is what is served.
package dirdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
)

// Store implements dirbus.Storer.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store over pool (whose search_path is the directory schema).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ dirbus.Storer = (*Store)(nil)

const cityColumns = `c.id, c.name, c.slug, c.country_code, c.latitude::text, c.longitude::text, c.confirmed`

// cityOrder sorts by the folded name (byte order: locale-independent and
// accent-insensitive, so Évora sits with the e's), then name and id for ties.
const cityOrder = `c.search_name, c.name, c.id`

func scanCity(row pgx.Row) (dirbus.City, error) {
	var c dirbus.City
	err := row.Scan(&c.ID, &c.Name, &c.Slug, &c.CountryCode, &c.Latitude, &c.Longitude, &c.Confirmed)
	return c, err
}

// QueryCities lists confirmed cities matching f. A search finds the names
// that hold it (accents and case folded) and, from 5 letters, the names or
// name words within one typo (two from 9 letters); the best match comes first:
// the whole name, then a name starting with it, then one holding it, then
// typos by distance.
func (s *Store) QueryCities(ctx context.Context, f dirbus.CityFilter) ([]dirbus.City, error) {
	var w pg.Where
	w.And("c.confirmed")
	if f.Slug != "" {
		w.And("c.slug = " + w.Arg(f.Slug))
	}
	sql := `SELECT ` + cityColumns + ` FROM cities c WHERE `
	order := cityOrder
	if f.Search != "" {
		sql = `WITH s AS (SELECT fold_name(` + w.Arg(f.Search) + `) AS f),
		k AS (SELECT f, CASE WHEN length(f) >= 9 THEN 2 WHEN length(f) >= 5 THEN 1 ELSE 0 END AS typos FROM s)
		SELECT ` + cityColumns + ` FROM k, cities c
		CROSS JOIN LATERAL (SELECT CASE WHEN c.search_name = k.f THEN 0 WHEN starts_with(c.search_name, k.f) THEN 1
			WHEN strpos(c.search_name, k.f) > 0 THEN 2 ELSE 3 END AS tier) t
		CROSS JOIN LATERAL (SELECT CASE WHEN t.tier < 3 THEN 0 WHEN k.typos = 0 THEN NULL
			ELSE least(public.levenshtein_less_equal(c.search_name, k.f, k.typos),
			           (SELECT min(public.levenshtein_less_equal(w, k.f, k.typos)) FROM regexp_split_to_table(c.search_name, ' ') w))
			END AS edits) d
		WHERE (t.tier < 3 OR d.edits <= k.typos) AND `
		order = `t.tier, d.edits, ` + cityOrder
	}
	sql += w.String() + ` ORDER BY ` + order
	rows, err := s.pool.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, fmt.Errorf("select cities: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.City, error) { return scanCity(r) })
}

// QuerySpaces lists confirmed spaces of confirmed cities matching f.
func (s *Store) QuerySpaces(ctx context.Context, f dirbus.SpaceFilter) ([]dirbus.Space, error) {
	var w pg.Where
	w.And("s.confirmed")
	w.And("c.confirmed")
	if f.CitySlug != "" {
		w.And("c.slug = " + w.Arg(f.CitySlug))
	}
	if f.SpaceID != 0 {
		w.And("s.id = " + w.Arg(f.SpaceID))
	}
	distance, order := `NULL::float8`, `s.search_name, s.name, s.id`
	if n := f.Near; n != nil {
		minLon, minLat, maxLon, maxLat := n.Box()
		distance = `great_circle_km(` + w.Arg(n.Lat) + `, ` + w.Arg(n.Lon) + `, s.latitude::float8, s.longitude::float8)`
		radius := w.Arg(n.RadiusKm)
		w.And(`s.geo <@ box(point(` + w.Arg(minLon) + `, ` + w.Arg(minLat) + `), point(` + w.Arg(maxLon) + `, ` + w.Arg(maxLat) + `))`)
		w.And(distance + ` <= ` + radius)
		order = `distance_km, ` + order
	}
	sql := `SELECT s.id, s.name, s.slug, s.address, s.latitude::text, s.longitude::text, c.id, c.name, ` + distance + ` AS distance_km
		FROM spaces s JOIN cities c ON c.id = s.city_id
		WHERE ` + w.String() + ` ORDER BY ` + order
	rows, err := s.pool.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, fmt.Errorf("select spaces: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.Space, error) {
		var sp dirbus.Space
		err := r.Scan(&sp.ID, &sp.Name, &sp.Slug, &sp.Address, &sp.Latitude, &sp.Longitude, &sp.CityID, &sp.CityName, &sp.DistanceKm)
		return sp, err
	})
}

// QueryCitySpaces lists every confirmed space of a confirmed city with the
// city's metadata, grouped by city.
func (s *Store) QueryCitySpaces(ctx context.Context) ([]dirbus.CitySpace, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id, s.name, s.slug, s.address, c.id, c.name, c.slug, c.latitude::text, c.longitude::text,
		       s.website, s.linkedin_url
		FROM spaces s JOIN cities c ON c.id = s.city_id
		WHERE s.confirmed AND c.confirmed
		ORDER BY c.search_name, c.id, s.search_name, s.name, s.id`)
	if err != nil {
		return nil, fmt.Errorf("select city spaces: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.CitySpace, error) {
		var cs dirbus.CitySpace
		err := r.Scan(&cs.SpaceID, &cs.SpaceName, &cs.SpaceSlug, &cs.Address, &cs.CityID, &cs.CityName, &cs.CitySlug,
			&cs.Latitude, &cs.Longitude, &cs.Website, &cs.LinkedInURL)
		return cs, err
	})
}

// CityByID returns a city, confirmed or not, or dirbus.ErrNotFound.
func (s *Store) CityByID(ctx context.Context, id int64) (dirbus.City, error) {
	c, err := scanCity(s.pool.QueryRow(ctx, `SELECT `+cityColumns+` FROM cities c WHERE c.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return dirbus.City{}, dirbus.ErrNotFound
	}
	if err != nil {
		return dirbus.City{}, fmt.Errorf("select city %d: %w", id, err)
	}
	return c, nil
}

// ConfirmedCitiesByName matches the folded name exactly or as a prefix. The
// prefix is a byte range on the C-collated search_name ([p, p || U+10FFFF)),
// which the partial btree index answers even under a generic plan, unlike a
// parameterised LIKE.
func (s *Store) ConfirmedCitiesByName(ctx context.Context, name string, prefix bool, limit int) ([]dirbus.City, error) {
	cond := `c.search_name = fold_name($1)`
	if prefix {
		cond = `c.search_name >= fold_name($1) AND c.search_name < fold_name($1) || chr(1114111)`
	}
	rows, err := s.pool.Query(ctx, `SELECT `+cityColumns+` FROM cities c
		WHERE c.confirmed AND `+cond+` ORDER BY `+cityOrder+` LIMIT $2`, name, limit)
	if err != nil {
		return nil, fmt.Errorf("select cities by name: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.City, error) { return scanCity(r) })
}

// SpaceFacts returns a space's facts, or dirbus.ErrNotFound.
func (s *Store) SpaceFacts(ctx context.Context, id int64) (dirbus.SpaceFacts, error) {
	var f dirbus.SpaceFacts
	err := s.pool.QueryRow(ctx, `SELECT id, name, slug, confirmed, is_pro, city_id FROM spaces WHERE id = $1`, id).
		Scan(&f.ID, &f.Name, &f.Slug, &f.Confirmed, &f.IsPro, &f.CityID)
	if errors.Is(err, pgx.ErrNoRows) {
		return dirbus.SpaceFacts{}, dirbus.ErrNotFound
	}
	if err != nil {
		return dirbus.SpaceFacts{}, fmt.Errorf("select space %d: %w", id, err)
	}
	return f, nil
}

// AdminSpaces lists the spaces email administers (case-insensitive), by id.
func (s *Store) AdminSpaces(ctx context.Context, email string) ([]dirbus.AdminSpace, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.id, s.name, s.slug, s.confirmed, s.is_pro, s.city_id, a.role
		FROM space_admins a JOIN spaces s ON s.id = a.space_id
		WHERE lower(a.email) = lower($1) ORDER BY s.id`, email)
	if err != nil {
		return nil, fmt.Errorf("select admin spaces: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.AdminSpace, error) {
		var a dirbus.AdminSpace
		err := r.Scan(&a.ID, &a.Name, &a.Slug, &a.Confirmed, &a.IsPro, &a.CityID, &a.Role)
		return a, err
	})
}

// SpaceBySlug implements dirbus.Storer.
func (s *Store) SpaceBySlug(ctx context.Context, slug string) (dirbus.SpaceFacts, error) {
	var f dirbus.SpaceFacts
	err := s.pool.QueryRow(ctx, `SELECT id, name, slug, confirmed, is_pro, city_id FROM spaces WHERE slug = $1`, slug).
		Scan(&f.ID, &f.Name, &f.Slug, &f.Confirmed, &f.IsPro, &f.CityID)
	if errors.Is(err, pgx.ErrNoRows) {
		return dirbus.SpaceFacts{}, dirbus.ErrNotFound
	}
	if err != nil {
		return dirbus.SpaceFacts{}, fmt.Errorf("select space by slug: %w", err)
	}
	return f, nil
}

// Catalog returns every city and space ordered by id, in one snapshot.
func (s *Store) Catalog(ctx context.Context) (dirbus.Catalog, error) {
	var cat dirbus.Catalog
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, name, slug, confirmed, latitude::float8, longitude::float8, country_code FROM cities ORDER BY id`)
		if err != nil {
			return fmt.Errorf("select cities: %w", err)
		}
		cat.Cities, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.CatalogCity, error) {
			var c dirbus.CatalogCity
			err := r.Scan(&c.ID, &c.Name, &c.Slug, &c.Confirmed, &c.Latitude, &c.Longitude, &c.CountryCode)
			return c, err
		})
		if err != nil {
			return fmt.Errorf("scan cities: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT id, name, slug, city_id, confirmed, is_pro FROM spaces ORDER BY id`)
		if err != nil {
			return fmt.Errorf("select spaces: %w", err)
		}
		cat.Spaces, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (dirbus.SpaceFacts, error) {
			var sp dirbus.SpaceFacts
			err := r.Scan(&sp.ID, &sp.Name, &sp.Slug, &sp.CityID, &sp.Confirmed, &sp.IsPro)
			return sp, err
		})
		if err != nil {
			return fmt.Errorf("scan spaces: %w", err)
		}
		return nil
	})
	if err != nil {
		return dirbus.Catalog{}, err
	}
	return cat, nil
}
