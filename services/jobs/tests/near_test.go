package tests

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

// near= keeps the jobs whose city lies within the radius, nearest first,
// each with its great-circle distance, paginated or streamed.
func TestListNear(t *testing.T) {
	t.Parallel()
	key := liveKey(560, 1560) // a Pro space of its own: only its jobs are listed
	const a, b = 1620, 1621   // 55.6 km apart (fxCoords)
	for i, city := range []int64{a, b, b} {
		body := jobBody(fmt.Sprintf("Near Job %d", i), city)
		create(t, key, body)
	}
	latA, lonA := fxCoords(a)
	latB, lonB := fxCoords(b)
	from := func(lat, lon float64) string { return fmt.Sprintf("%.4f,%.4f", lat, lon) }
	// a point 10 km north of a
	pLat, pLon := latA+10/111.2, lonA

	tests := []struct {
		name, query string
		want        []int64 // the cities, in order
	}{
		{"near200OnlyWithinTheRadius", "near=" + from(pLat, pLon) + "&radius_km=20", []int64{a}},
		{"near200NearestFirst", "near=" + from(pLat, pLon) + "&radius_km=100", []int64{a, b, b}},
		{"near200FromTheOtherSide", "near=" + from(latB, lonB) + "&radius_km=100", []int64{b, b, a}},
		{"near200SortNewest", "near=" + from(pLat, pLon) + "&radius_km=100&sort=newest", []int64{b, b, a}},
		{"near200Nothing", "near=-50,0&radius_km=500", nil},
		{"near200WithQ", "near=" + from(pLat, pLon) + "&radius_km=100&q=job", []int64{a, b, b}},
	}
	for _, tc := range tests {
		for _, app := range []struct {
			name string
			path string
			flat bool
		}{{"Paged", "/v2/jobs?per_page=50&", false}, {"Streamed", "/v2/jobs?", true}} {
			t.Run(tc.name+app.name, func(t *testing.T) {
				a := appPaged
				if app.flat {
					a = appFlat
				}
				r := do(t, a, "GET", app.path+tc.query, "", &key)
				var d struct {
					Jobs []struct {
						City       string   `json:"city_slug"`
						DistanceKm *float64 `json:"distance_km"`
					} `json:"jobs"`
					Total int `json:"total"`
				}
				r.data(t, &d)
				if r.Status != 200 || d.Total != len(tc.want) || len(d.Jobs) != len(tc.want) {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				for i, j := range d.Jobs {
					if j.City != fmt.Sprintf("city-%d", tc.want[i]) {
						t.Fatalf("job %d in %s, want city-%d: %s", i, j.City, tc.want[i], r.Body)
					}
					lat, lon := fxCoords(tc.want[i])
					var cLat, cLon float64
					if _, err := fmt.Sscanf(tc.query[len("near="):], "%f,%f", &cLat, &cLon); err != nil {
						t.Fatal(err)
					}
					want := geo.DistanceKm(cLat, cLon, lat, lon)
					if j.DistanceKm == nil || math.Abs(*j.DistanceKm-want) > 0.006 {
						t.Fatalf("job %d: distance_km %v, want %.2f", i, j.DistanceKm, want)
					}
				}
			})
		}
	}
	// Without near there is no distance.
	r := do(t, appPaged, "GET", "/v2/jobs?per_page=50", "", &key)
	if r.Status != 200 || bytes.Contains(r.Body, []byte("distance_km")) {
		t.Fatalf("distance without near: %s", r.Body)
	}
}

// Jobs written before near= existed have no coordinates, so no near search
// finds them, until jobs-admin backfill-geo copies their cities' in.
func TestBackfillGeo(t *testing.T) {
	t.Parallel()
	key := liveKey(561, 1561)
	const city = 1630
	cr := create(t, key, jobBody("Old Job Without Coordinates", city))
	if _, err := pool.Exec(bgContext, `UPDATE jobs SET city_lat = NULL, city_lon = NULL WHERE id = $1`, cr.JobID); err != nil {
		t.Fatal(err)
	}
	lat, lon := fxCoords(city)
	near := fmt.Sprintf("/v2/jobs?near=%.4f,%.4f&radius_km=5", lat, lon)
	count := func() int {
		var d struct{ Total int }
		do(t, appFlat, "GET", near, "", &key).data(t, &d)
		return d.Total
	}
	if n := count(); n != 0 {
		t.Fatalf("a job without coordinates found near: %d", n)
	}
	n, err := jobdb.New(pool).SetCityCoords(bgContext, []jobdb.CityCoords{{CityID: city, Lat: lat, Lon: lon}, {CityID: 999999, Lat: 1, Lon: 1}})
	if err != nil || n != 1 {
		t.Fatalf("backfill: %d %v", n, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after the backfill: %d near", n)
	}
	if n, _ := jobdb.New(pool).SetCityCoords(bgContext, []jobdb.CityCoords{{CityID: city, Lat: lat, Lon: lon}}); n != 0 {
		t.Fatalf("a second backfill changed %d jobs", n)
	}
}
