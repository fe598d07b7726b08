// Package cityzone finds a city's IANA time zone: the directory's
// coordinates of the city, looked up in the time zones' boundaries
// (github.com/ringsaturn/tzf, the timezone-boundary-builder polygons).
package cityzone

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/ringsaturn/tzf"
	tzfrellite "github.com/ringsaturn/tzf-rel-lite"
	pb "github.com/ringsaturn/tzf/gen/go/tzf/v1"
	"google.golang.org/protobuf/proto"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Directory is the directory's look-ups the finder needs (dirclient's).
type Directory interface {
	City(ctx context.Context, id int64) (jobbus.City, bool, error)
	ResolveCityName(ctx context.Context, name string) (jobbus.CityResolution, error)
}

// Finder implements alertbus.CityZones.
type Finder struct {
	Dir Directory
}

// The zones come from two indexes, loaded when a zone is first asked for and
// dropped a minute after their last use: saving an alert is rare, and the
// tiles alone are about 9 MiB of heap, which the collector's headroom doubles
// in every jobs replica for its whole life (make bench's jobs VmRSS, "-profile
// end"). The tiles answer for a point whose tile lies in one zone, which is most
// cities; only a city on a tile that a border crosses loads the polygons (about
// 40 MiB kept, a 150 MiB peak while they decode). Zones found are kept by
// point, so a city asked for again loads nothing.
var (
	tiles = &held{idle: time.Minute, load: func() (tzf.F, error) {
		in := &pb.PreindexTimezones{}
		if err := proto.Unmarshal(tzfrellite.PreindexData, in); err != nil {
			return nil, err
		}
		return tzf.NewFuzzyFinderFromPB(in)
	}}
	polygons = &held{idle: time.Minute, load: func() (tzf.F, error) {
		in := &pb.CompressedTimezones{}
		if err := proto.Unmarshal(tzfrellite.LiteCompressData, in); err != nil {
			return nil, err
		}
		f, err := tzf.NewFinderFromCompressed(in, tzf.SetDropPBTZ)
		debug.FreeOSMemory() // give the decoding's peak back at once
		return f, err
	}}
	found = zoneCache{zones: map[[2]float64]string{}}
)

// held is an index kept while it is used and dropped after idle without use.
type held struct {
	idle time.Duration
	load func() (tzf.F, error)

	mu    sync.Mutex
	f     tzf.F
	timer *time.Timer
	loads int // how many times it was loaded (tests)
}

func (h *held) get() (tzf.F, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil {
		f, err := h.load()
		if err != nil {
			return nil, err
		}
		h.f, h.loads = f, h.loads+1
	}
	if h.timer == nil {
		h.timer = time.AfterFunc(h.idle, h.drop)
	} else {
		h.timer.Reset(h.idle)
	}
	return h.f, nil
}

func (h *held) drop() {
	h.mu.Lock()
	h.f, h.timer = nil, nil
	h.mu.Unlock()
	debug.FreeOSMemory() // the index's pages back to the system now, not over minutes
}

// zoneCache keeps the zone of each point asked for; the directory has a few
// thousand cities, and it starts again empty past maxZones.
type zoneCache struct {
	mu    sync.Mutex
	zones map[[2]float64]string
}

const maxZones = 50000

func (c *zoneCache) get(p [2]float64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	z, ok := c.zones[p]
	return z, ok
}

func (c *zoneCache) put(p [2]float64, z string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.zones) >= maxZones {
		clear(c.zones)
	}
	c.zones[p] = z
}

// Zone is the IANA zone at a point ("" when none is known).
func Zone(lat, lon float64) (string, error) {
	p := [2]float64{lat, lon}
	if z, ok := found.get(p); ok {
		return z, nil
	}
	t, err := tiles.get()
	if err != nil {
		return "", fmt.Errorf("time zone tiles: %w", err)
	}
	var tz string
	if names, err := t.GetTimezoneNames(lon, lat); err == nil && len(names) == 1 {
		tz = names[0]
	} else {
		p, err := polygons.get()
		if err != nil {
			return "", fmt.Errorf("time zone boundaries: %w", err)
		}
		tz = p.GetTimezoneName(lon, lat)
	}
	if tz == "" || !loadable(tz) {
		tz = ""
	}
	found.put(p, tz)
	return tz, nil
}

// loadable reports whether this Go knows zone tz (tzf's data may be newer).
func loadable(tz string) bool {
	_, err := time.LoadLocation(tz)
	return err == nil
}

// CityZone is the zone of the confirmed city of slug, "" when the directory
// has no such city. A slug is looked up as the name it was made of (accents
// and case are the directory's to match), then checked to be that slug.
func (f Finder) CityZone(ctx context.Context, slug string) (string, error) {
	res, err := f.Dir.ResolveCityName(ctx, strings.ReplaceAll(slug, "-", " "))
	if err != nil {
		return "", fmt.Errorf("resolve city %q: %w", slug, err)
	}
	city, found := res.City, res.Result == "resolved" && res.City.Slug == slug
	if !found && res.Result == "ambiguous" {
		for _, c := range res.Candidates {
			if c.Slug == slug {
				if city, found, err = f.Dir.City(ctx, c.ID); err != nil {
					return "", fmt.Errorf("city %d: %w", c.ID, err)
				}
				break
			}
		}
	}
	if !found || (city.Lat == 0 && city.Lon == 0) {
		return "", nil
	}
	return Zone(city.Lat, city.Lon)
}
