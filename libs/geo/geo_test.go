package geo

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		near, radius string
		ok           bool
		problems     int
	}{
		{"", "", false, 0},
		{"52.52,13.405", "25", true, 0},
		{" 52.52 , 13.405 ", "0.5", true, 0},
		{"52.52", "25", false, 1},
		{"91,0", "25", false, 1},
		{"0,181", "25", false, 1},
		{"NaN,0", "25", false, 1},
		{"52.52,13.405", "", false, 1},
		{"", "25", false, 1},
		{"52.52,13.405", "501", false, 1},
		{"52.52,13.405", "0", false, 1},
		{"x,y", "-1", false, 2},
	}
	for _, tc := range tests {
		_, ok, p := Parse(tc.near, tc.radius)
		if ok != tc.ok || len(p) != tc.problems {
			t.Errorf("Parse(%q, %q) = %v %q", tc.near, tc.radius, ok, p)
		}
	}
}

// Every point within the radius lies in the box (random centres and points,
// poles and the antimeridian included).
func TestBoxHoldsTheCircle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := Near{Lat: r.Float64()*180 - 90, Lon: r.Float64()*360 - 180, RadiusKm: r.Float64() * MaxRadiusKm}
		lat, lon := r.Float64()*180-90, r.Float64()*360-180
		// a point near the centre, most of the time
		if r.IntN(4) > 0 {
			lat = math.Max(-90, math.Min(90, n.Lat+(r.Float64()*2-1)*6))
			lon = n.Lon + (r.Float64()*2-1)*12
			lon = math.Mod(lon+540, 360) - 180
		}
		if DistanceKm(n.Lat, n.Lon, lat, lon) > n.RadiusKm {
			continue
		}
		minLon, minLat, maxLon, maxLat := n.Box()
		if lat < minLat-1e-9 || lat > maxLat+1e-9 || lon < minLon-1e-9 || lon > maxLon+1e-9 {
			t.Fatalf("%+v: %v,%v (%.1f km) outside box %v,%v..%v,%v", n, lat, lon, DistanceKm(n.Lat, n.Lon, lat, lon), minLat, minLon, maxLat, maxLon)
		}
	}
}

func TestDistanceKm(t *testing.T) {
	// Berlin to Munich, about 504 km.
	if d := DistanceKm(52.520008, 13.404954, 48.137154, 11.576124); math.Abs(d-504) > 3 {
		t.Fatalf("Berlin-Munich %.1f km", d)
	}
}
