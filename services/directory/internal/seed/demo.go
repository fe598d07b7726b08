package seed

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The spaces the gateway's demo keys refer to. They keep these ids on every
// database the demo set is loaded into.
const (
	DemoProSpaceID         = 1 // confirmed Pro space in Berlin
	DemoFreeSpaceID        = 2 // confirmed non-Pro space in Lisbon
	DemoUnconfirmedSpaceID = 3 // unconfirmed space in Paris
)

var fixedSpaces = []SpaceRow{
	{ID: DemoProSpaceID, Name: "Spreeufer Coworking", Slug: "spreeufer-coworking-berlin",
		Address: "Holzmarktstraße 25, Berlin", Lat: "52.511870", Lon: "13.424860", CitySlug: "berlin",
		Confirmed: true, IsPro: true,
		Website: ptr("https://spreeufer-coworking.example.com"), LinkedIn: ptr("https://www.linkedin.com/company/spreeufer-coworking")},
	{ID: DemoFreeSpaceID, Name: "Tejo Coworking", Slug: "tejo-coworking-lisbon",
		Address: "Rua da Prata 80, Lisbon", Lat: "38.710770", Lon: "-9.136880", CitySlug: "lisbon",
		Confirmed: true, IsPro: false, Website: ptr("https://tejo-coworking.example.com")},
	{ID: DemoUnconfirmedSpaceID, Name: "Atelier Canal Saint-Martin", Slug: "atelier-canal-saint-martin-paris",
		Address: "42 Quai de Valmy, Paris", Lat: "48.871270", Lon: "2.364980", CitySlug: "paris",
		Confirmed: false, IsPro: false},
}

var spaceSuffixes = []string{"Coworking", "Hub", "Works", "Lab", "Collective", "Studio", "Commons", "House", "Loft", "Campus", "Yard", "Base"}

// DemoCities returns the demo cities in insertion order.
func DemoCities() []CityRow {
	out := make([]CityRow, 0, len(demoCities))
	for _, c := range demoCities {
		slug := c.Slug
		if slug == "" {
			slug = Slugify(c.Name)
		}
		out = append(out, CityRow{Name: c.Name, Slug: slug, Country: c.Country, Lat: c.Lat, Lon: c.Lon, Confirmed: c.Confirmed})
	}
	return out
}

// DemoSpaces returns the demo spaces: the three fixed ones first, then one
// per neighbourhood of every demo city, with flags derived from a hash of the
// slug (so adding a city never changes another city's spaces).
func DemoSpaces() []SpaceRow {
	out := append([]SpaceRow(nil), fixedSpaces...)
	for _, c := range demoCities {
		citySlug := c.Slug
		if citySlug == "" {
			citySlug = Slugify(c.Name)
		}
		st := streets[c.Country]
		for _, hood := range c.Hoods {
			h := hash32(citySlug + "/" + hood)
			name := hood + " " + spaceSuffixes[h%uint32(len(spaceSuffixes))]
			slug := Slugify(name + " " + citySlug)
			street := st.names[(h>>4)%uint32(len(st.names))]
			number := strconv.Itoa(int(1 + (h>>8)%180))
			addr := street + " " + number
			if st.numberFirst {
				addr = number + " " + street
			}
			sp := SpaceRow{
				Name:      name,
				Slug:      slug,
				Address:   addr + ", " + c.Name,
				Lat:       offset(c.Lat, hash32(slug+"/lat"), 0.02, 90),
				Lon:       offset(c.Lon, hash32(slug+"/lon"), 0.03, 180),
				CitySlug:  citySlug,
				Confirmed: (h>>12)%7 != 0,
				IsPro:     (h>>15)%3 == 0,
			}
			if (h>>18)%4 != 0 {
				sp.Website = ptr("https://" + slug + ".example.com")
			}
			if (h>>21)%5 < 3 {
				sp.LinkedIn = ptr("https://www.linkedin.com/company/" + slug)
			}
			out = append(out, sp)
		}
	}
	return out
}

const upsertCity = `
INSERT INTO cities (name, slug, country_code, latitude, longitude, confirmed)
VALUES ($1, $2, $3, $4::text::numeric, $5::text::numeric, $6)
ON CONFLICT (slug) DO UPDATE SET
	name = EXCLUDED.name, country_code = EXCLUDED.country_code, latitude = EXCLUDED.latitude,
	longitude = EXCLUDED.longitude, confirmed = EXCLUDED.confirmed, updated_at = now()
WHERE (cities.name, cities.country_code, cities.latitude, cities.longitude, cities.confirmed)
	IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.country_code, EXCLUDED.latitude, EXCLUDED.longitude, EXCLUDED.confirmed)`

const spaceSet = `
	name = EXCLUDED.name, slug = EXCLUDED.slug, address = EXCLUDED.address, latitude = EXCLUDED.latitude,
	longitude = EXCLUDED.longitude, city_id = EXCLUDED.city_id, confirmed = EXCLUDED.confirmed,
	is_pro = EXCLUDED.is_pro, website = EXCLUDED.website, linkedin_url = EXCLUDED.linkedin_url, updated_at = now()
WHERE (spaces.name, spaces.slug, spaces.address, spaces.latitude, spaces.longitude, spaces.city_id,
	spaces.confirmed, spaces.is_pro, spaces.website, spaces.linkedin_url)
	IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.slug, EXCLUDED.address, EXCLUDED.latitude, EXCLUDED.longitude,
	EXCLUDED.city_id, EXCLUDED.confirmed, EXCLUDED.is_pro, EXCLUDED.website, EXCLUDED.linkedin_url)`

// upsertFixedSpace keeps a demo key's space at its id.
const upsertFixedSpace = `
INSERT INTO spaces (id, name, slug, address, latitude, longitude, city_id, confirmed, is_pro, website, linkedin_url)
VALUES ($1, $2, $3, $4, $5::text::numeric, $6::text::numeric, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET` + spaceSet

const upsertSpace = `
INSERT INTO spaces (name, slug, address, latitude, longitude, city_id, confirmed, is_pro, website, linkedin_url)
VALUES ($1, $2, $3, $4::text::numeric, $5::text::numeric, $6, $7, $8, $9, $10)
ON CONFLICT (slug) DO UPDATE SET` + spaceSet

// LoadDemo loads the demo set idempotently: cities and spaces are upserted by
// slug (the demo keys' spaces by id), admins and photos inserted once. On a
// fresh database the fixed spaces get ids 1, 2 and 3.
func LoadDemo(ctx context.Context, pool *pgxpool.Pool) (Stats, error) {
	var stats Stats
	err := inTx(ctx, pool, func(tx pgx.Tx) error {
		cities := DemoCities()
		b := &pgx.Batch{}
		for _, c := range cities {
			b.Queue(upsertCity, c.Name, c.Slug, c.Country, c.Lat, c.Lon, c.Confirmed)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("upsert cities: %w", err)
		}
		ids, err := cityIDs(ctx, tx)
		if err != nil {
			return err
		}

		spaces := DemoSpaces()
		b = &pgx.Batch{}
		for _, s := range spaces {
			if s.ID != 0 {
				b.Queue(upsertFixedSpace, s.ID, s.Name, s.Slug, s.Address, s.Lat, s.Lon, ids[s.CitySlug], s.Confirmed, s.IsPro, s.Website, s.LinkedIn)
			}
		}
		// The fixed ids were given explicitly: move the identity past them.
		b.Queue(`SELECT setval(pg_get_serial_sequence('spaces', 'id'), GREATEST((SELECT max(id) FROM spaces), 1))`)
		for _, s := range spaces {
			if s.ID == 0 {
				b.Queue(upsertSpace, s.Name, s.Slug, s.Address, s.Lat, s.Lon, ids[s.CitySlug], s.Confirmed, s.IsPro, s.Website, s.LinkedIn)
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("upsert spaces: %w", err)
		}

		// Admins and photos exist so that the API visibly never returns them.
		b = &pgx.Batch{}
		for _, s := range spaces {
			h := hash32(s.Slug + "/gallery")
			b.Queue(`INSERT INTO space_admins (space_id, email, role)
				SELECT id, 'owner+' || slug || '@coworkjobs.example', 'owner' FROM spaces WHERE slug = $1
				ON CONFLICT DO NOTHING`, s.Slug)
			for i := 0; i < int(1+h%3); i++ {
				b.Queue(`INSERT INTO space_photos (space_id, position, url, caption)
					SELECT id, $2, 'https://images.coworkjobs.example/spaces/' || slug || '/' || $3 || '.jpg', name
					FROM spaces WHERE slug = $1
					ON CONFLICT (space_id, position) DO NOTHING`, s.Slug, i, strconv.Itoa(i+1))
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("insert admins and photos: %w", err)
		}
		stats, err = Count(ctx, tx)
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("load demo: %w", err)
	}
	return stats, nil
}

func cityIDs(ctx context.Context, tx pgx.Tx) (map[string]int64, error) {
	rows, err := tx.Query(ctx, `SELECT slug, id FROM cities`)
	if err != nil {
		return nil, fmt.Errorf("select city ids: %w", err)
	}
	defer rows.Close()
	ids := map[string]int64{}
	for rows.Next() {
		var slug string
		var id int64
		if err := rows.Scan(&slug, &id); err != nil {
			return nil, fmt.Errorf("scan city id: %w", err)
		}
		ids[slug] = id
	}
	return ids, rows.Err()
}
