package cityzone

import "testing"

// The seeded cities' coordinates give their zones.
func TestZone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		lat, lon float64
		want     string
	}{
		{"Lisbon", 38.722252, -9.139337, "Europe/Lisbon"},
		{"Berlin", 52.520008, 13.404954, "Europe/Berlin"},
		{"New York", 40.7128, -74.006, "America/New_York"},
		{"Kathmandu", 27.7172, 85.324, "Asia/Kathmandu"},
		// 5 km apart across the Rhine: a tile holds both zones, the
		// polygons decide
		{"Strasbourg", 48.5734, 7.7521, "Europe/Paris"},
		{"Kehl", 48.5728, 7.8156, "Europe/Berlin"},
		{"Tijuana", 32.5149, -117.0382, "America/Tijuana"},
		{"San Diego", 32.7157, -117.1611, "America/Los_Angeles"},
	} {
		got, err := Zone(c.lat, c.lon)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}
