// Package cityzone finds a city's IANA time zone: the directory's
// coordinates of the city, looked up in the time zones' boundaries
// (github.com/ringsaturn/tzf, the timezone-boundary-builder polygons).
package cityzone

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ringsaturn/tzf"

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

// The boundaries are loaded once per process, on the first look-up.
var boundaries = sync.OnceValues(tzf.NewDefaultFinder)

// Zone is the IANA zone at a point ("" when none is known).
func Zone(lat, lon float64) (string, error) {
	f, err := boundaries()
	if err != nil {
		return "", fmt.Errorf("time zone boundaries: %w", err)
	}
	tz := f.GetTimezoneName(lon, lat)
	if _, err := time.LoadLocation(tz); tz == "" || err != nil {
		return "", nil
	}
	return tz, nil
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

// Warm loads the boundaries now (they take a second or two), so that the
// first alert saved does not wait for them.
func Warm() { _, _ = boundaries() }
