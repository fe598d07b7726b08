package cityzone

import (
	"testing"
	"time"
)

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

// An index is loaded once while it is used, dropped after its idle time,
// and loaded again when needed after that.
func TestIndexIsDroppedWhenIdle(t *testing.T) {
	t.Parallel()
	h := &held{idle: 50 * time.Millisecond, load: tiles.load}
	for range 3 {
		if _, err := h.get(); err != nil {
			t.Fatal(err)
		}
	}
	if h.loads != 1 {
		t.Fatalf("loaded %d times while in use, want 1", h.loads)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		dropped := h.f == nil
		h.mu.Unlock()
		if dropped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index was kept past its idle time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if f, err := h.get(); err != nil || f == nil || h.loads != 2 {
		t.Fatalf("after the drop: %v, %d loads", err, h.loads)
	}
	if names, err := h.f.GetTimezoneNames(13.404954, 52.520008); err != nil || len(names) != 1 || names[0] != "Europe/Berlin" {
		t.Fatalf("reloaded index: %v %v", names, err)
	}
}
