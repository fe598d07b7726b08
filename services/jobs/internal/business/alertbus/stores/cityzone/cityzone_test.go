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
	} {
		got, err := Zone(c.lat, c.lon)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		}
	}
}
