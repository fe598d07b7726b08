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

// The zones come from two indexes, each loaded once per process when first
// needed: the tiles (about 9 MiB of heap) answer for a point whose tile lies
// in one zone, which is most cities; only a city on a tile that a border
// crosses loads the polygons (about 40 MiB kept, a 150 MiB peak while they
// decode), which tzf's DefaultFinder would load in every jobs replica.
var (
	tiles = sync.OnceValues(func() (tzf.F, error) {
		in := &pb.PreindexTimezones{}
		if err := proto.Unmarshal(tzfrellite.PreindexData, in); err != nil {
			return nil, err
		}
		return tzf.NewFuzzyFinderFromPB(in)
	})
	polygons = sync.OnceValues(func() (tzf.F, error) {
		in := &pb.CompressedTimezones{}
		if err := proto.Unmarshal(tzfrellite.LiteCompressData, in); err != nil {
			return nil, err
		}
		f, err := tzf.NewFinderFromCompressed(in, tzf.SetDropPBTZ)
		debug.FreeOSMemory() // give the decoding's peak back at once
		return f, err
	})
)

// Zone is the IANA zone at a point ("" when none is known).
func Zone(lat, lon float64) (string, error) {
	t, err := tiles()
	if err != nil {
		return "", fmt.Errorf("time zone tiles: %w", err)
	}
	var tz string
	if names, err := t.GetTimezoneNames(lon, lat); err == nil && len(names) == 1 {
		tz = names[0]
	} else {
		p, err := polygons()
		if err != nil {
			return "", fmt.Errorf("time zone boundaries: %w", err)
		}
		tz = p.GetTimezoneName(lon, lat)
	}
	if tz == "" || !loadable(tz) {
		return "", nil
	}
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

// Warm loads the tiles now, so that the first alert saved does not wait
// for them.
func Warm() { _, _ = tiles() }
