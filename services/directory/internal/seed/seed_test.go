package seed_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/seed"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(pgtest.MainURL(m, "directory_seed", &dbURL)) }

// freshDB gives a test its own migrated schema in the package's database.
func freshDB(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	return pgtest.Open(t, dbURL, pgtest.Schema{Name: schema, Migrations: migrations.FS, Pool: pg.Options{MaxConns: 4}})
}

// fingerprint summarises every row of the directory (timestamps excluded).
func fingerprint(t *testing.T, pool *pgxpool.Pool, withIDs bool) string {
	t.Helper()
	cityID, spaceID := "''", "''"
	if withIDs {
		cityID, spaceID = "c.id::text", "s.id::text"
	}
	var cities, spaces, extras string
	err := pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT
		(SELECT md5(coalesce(string_agg(concat_ws('|', %s, c.name, c.slug, c.country_code, c.latitude, c.longitude, c.confirmed), E'\n' ORDER BY c.slug), '')) FROM cities c),
		(SELECT md5(coalesce(string_agg(concat_ws('|', %s, s.name, s.slug, s.address, s.latitude, s.longitude, c.slug, s.confirmed,
			s.is_pro, s.website, s.linkedin_url), E'\n' ORDER BY s.slug), '')) FROM spaces s JOIN cities c ON c.id = s.city_id),
		(SELECT concat((SELECT count(*) FROM space_admins), '/', (SELECT count(*) FROM space_photos)))`,
		cityID, spaceID)).Scan(&cities, &spaces, &extras)
	if err != nil {
		t.Fatal(err)
	}
	return cities + "/" + spaces + "/" + extras
}

func TestDemoIsIdempotentAndComplete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := freshDB(t, "demo_once")
	first, err := seed.LoadDemo(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	fp := fingerprint(t, pool, true)
	var stamp string
	if err := pool.QueryRow(ctx, `SELECT max(updated_at)::text FROM spaces`).Scan(&stamp); err != nil {
		t.Fatal(err)
	}
	second, err := seed.LoadDemo(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatalf("second run changed the counts: %v then %v", first, second)
	}
	if got := fingerprint(t, pool, true); got != fp {
		t.Fatalf("second run changed the data: %s then %s", fp, got)
	}
	var stamp2 string
	if err := pool.QueryRow(ctx, `SELECT max(updated_at)::text FROM spaces`).Scan(&stamp2); err != nil {
		t.Fatal(err)
	}
	if stamp != stamp2 {
		t.Fatalf("second run touched rows: updated_at %s then %s", stamp, stamp2)
	}

	if first.Cities < 60 || first.Spaces < 200 {
		t.Fatalf("demo too small: %v", first)
	}
	if first.ConfirmedCities == first.Cities || first.ConfirmedSpaces == first.Spaces {
		t.Fatalf("demo should hold unconfirmed cities and spaces: %v", first)
	}
	if first.ProSpaces == 0 || first.ProSpaces == first.Spaces {
		t.Fatalf("demo should mix Pro and non-Pro spaces: %v", first)
	}
	var countries, withSite, withoutSite, withLinkedIn, withoutLinkedIn int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(DISTINCT country_code) FROM cities),
		count(*) FILTER (WHERE website IS NOT NULL), count(*) FILTER (WHERE website IS NULL),
		count(*) FILTER (WHERE linkedin_url IS NOT NULL), count(*) FILTER (WHERE linkedin_url IS NULL) FROM spaces`).
		Scan(&countries, &withSite, &withoutSite, &withLinkedIn, &withoutLinkedIn)
	if err != nil {
		t.Fatal(err)
	}
	if countries < 5 || withSite == 0 || withoutSite == 0 || withLinkedIn == 0 || withoutLinkedIn == 0 {
		t.Fatalf("demo lacks variety: countries=%d website %d/%d linkedin %d/%d", countries, withSite, withoutSite, withLinkedIn, withoutLinkedIn)
	}

	// The demo keys' spaces.
	type fixed struct {
		city             string
		confirmed, isPro bool
	}
	want := map[int64]fixed{1: {"Berlin", true, true}, 2: {"Lisbon", true, false}, 3: {"Paris", false, false}}
	for id, w := range want {
		var got fixed
		err := pool.QueryRow(ctx, `SELECT c.name, s.confirmed, s.is_pro FROM spaces s JOIN cities c ON c.id = s.city_id WHERE s.id = $1`, id).
			Scan(&got.city, &got.confirmed, &got.isPro)
		if err != nil {
			t.Fatalf("space %d: %v", id, err)
		}
		if got != w {
			t.Fatalf("space %d = %+v, want %+v", id, got, w)
		}
	}
	// New spaces continue after the fixed ids.
	var next int64
	if err := pool.QueryRow(ctx, `INSERT INTO spaces (name, slug, latitude, longitude, city_id)
		VALUES ('New', 'new-space', 1, 1, 1) RETURNING id`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next <= int64(first.Spaces) {
		t.Fatalf("identity not moved past the seeded ids: next id %d", next)
	}
}

func TestDemoCoordinatesAreTrue(t *testing.T) {
	t.Parallel()
	// Spot checks against well-known coordinates (within 0.1 degree).
	known := map[string][2]float64{
		"berlin": {52.52, 13.405}, "lisbon": {38.722, -9.139}, "paris": {48.857, 2.352},
		"zurich": {47.377, 8.542}, "new-york": {40.713, -74.006}, "sao-paulo": {-23.551, -46.633},
		"tokyo": {35.68, 139.69}, "cape-town": {-33.925, 18.424},
	}
	found := 0
	for _, c := range seed.DemoCities() {
		k, ok := known[c.Slug]
		if !ok {
			continue
		}
		found++
		lat, errLat := strconv.ParseFloat(c.Lat, 64)
		lon, errLon := strconv.ParseFloat(c.Lon, 64)
		if errLat != nil || errLon != nil {
			t.Fatalf("%s: coordinates %q,%q are not decimals", c.Slug, c.Lat, c.Lon)
		}
		if d := max(abs(lat-k[0]), abs(lon-k[1])); d > 0.1 {
			t.Errorf("%s at %s,%s, want about %v", c.Slug, c.Lat, c.Lon, k)
		}
	}
	if found != len(known) {
		t.Fatalf("found %d of %d known cities", found, len(known))
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestSyntheticIsDeterministic(t *testing.T) {
	t.Parallel()
	opts := seed.SyntheticOptions{Cities: 300, Spaces: 3000, Seed: 42}
	c1, s1 := seed.Synthetic(opts)
	c2, s2 := seed.Synthetic(opts)
	if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(s1, s2) {
		t.Fatal("same seed gave different data")
	}
	opts.Seed = 43
	c3, s3 := seed.Synthetic(opts)
	if reflect.DeepEqual(c1, c3) || reflect.DeepEqual(s1, s3) {
		t.Fatal("different seeds gave the same data")
	}
	slugs := map[string]bool{}
	for _, c := range c1 {
		if slugs[c.Slug] {
			t.Fatalf("duplicate slug %s", c.Slug)
		}
		slugs[c.Slug] = true
	}
}

func TestSyntheticLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := freshDB(t, "synthetic")
	demo, err := seed.LoadDemo(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	opts := seed.SyntheticOptions{Cities: 200, Spaces: 2000, Seed: 7}
	stats, err := seed.LoadSynthetic(ctx, pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Cities != demo.Cities+200 || stats.Spaces != demo.Spaces+2000 {
		t.Fatalf("stats %v after demo %v", stats, demo)
	}
	fp := fingerprint(t, pool, false)
	// Loading again replaces the synthetic rows with the same ones and keeps the demo.
	if _, err := seed.LoadSynthetic(ctx, pool, opts); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(t, pool, false); got != fp {
		t.Fatalf("reload changed the data: %s then %s", fp, got)
	}
	var fixed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM spaces WHERE id IN (1, 2, 3)`).Scan(&fixed); err != nil || fixed != 3 {
		t.Fatalf("demo spaces lost: %d, %v", fixed, err)
	}

	// With reset the ids are deterministic too.
	opts.Reset = true
	if _, err := seed.LoadSynthetic(ctx, pool, opts); err != nil {
		t.Fatal(err)
	}
	withIDs := fingerprint(t, pool, true)
	if _, err := seed.LoadSynthetic(ctx, pool, opts); err != nil {
		t.Fatal(err)
	}
	if got := fingerprint(t, pool, true); got != withIDs {
		t.Fatalf("reset reload changed the data or ids")
	}
	var total int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM cities`).Scan(&total); err != nil || total != 200 {
		t.Fatalf("after reset %d cities, %v", total, err)
	}
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Zürich":                     "zurich",
		"São Paulo":                  "sao-paulo",
		"Łódź":                       "lodz",
		"Presqu'île Hub":             "presquile-hub",
		"  Straße -- am  Meer ":      "strasse-am-meer",
		"Las Palmas de Gran Canaria": "las-palmas-de-gran-canaria",
		"Aarhus Ø":                   "aarhus-o",
		"Kreis 5":                    "kreis-5",
	} {
		if got := seed.Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
}
