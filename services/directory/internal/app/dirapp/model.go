package dirapp

import (
	"math"
	"strconv"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
)

// City is the spec's City: ids and coordinates as text.
type City struct {
	IDCity    string `json:"id_city"`
	CityName  string `json:"city_name"`
	CitySlug  string `json:"city_slug"`
	Latitude  string `json:"latitude"`
	Longitude string `json:"longitude"`
}

func toCity(c dirbus.City) City {
	return City{
		IDCity:    strconv.FormatInt(c.ID, 10),
		CityName:  c.Name,
		CitySlug:  c.Slug,
		Latitude:  c.Latitude,
		Longitude: c.Longitude,
	}
}

// Space is the spec's Space, exactly: no ids, no admins, no photos.
type Space struct {
	SpaceName    string `json:"space_name"`
	SpaceURL     string `json:"space_url"`
	SpaceAddress string `json:"space_address"`
	Latitude     string `json:"latitude"`
	Longitude    string `json:"longitude"`
	CityName     string `json:"city_name"`
	// DistanceKm is set with near=: the great-circle distance, km, to 0.01.
	DistanceKm *float64 `json:"distance_km,omitempty"`
}

func toSpace(s dirbus.Space) Space {
	return Space{
		SpaceName:    s.Name,
		SpaceURL:     s.Slug,
		SpaceAddress: s.Address,
		Latitude:     s.Latitude,
		Longitude:    s.Longitude,
		CityName:     s.CityName,
		DistanceKm:   round2(s.DistanceKm),
	}
}

// round2 rounds a distance to 10 m.
func round2(v *float64) *float64 {
	if v == nil {
		return nil
	}
	r := math.Round(*v*100) / 100
	return &r
}

// CitySpace is the City-space entry: the Space fields plus the space and
// city ids (numeric text, like City.id_city), the city slug, website and
// LinkedIn URL (null when absent). Latitude and longitude are the city's.
type CitySpace struct {
	IDSpace      string  `json:"id_space"`
	SpaceName    string  `json:"space_name"`
	SpaceURL     string  `json:"space_url"`
	SpaceAddress string  `json:"space_address"`
	IDCity       string  `json:"id_city"`
	CityName     string  `json:"city_name"`
	CitySlug     string  `json:"city_slug"`
	Latitude     string  `json:"latitude"`
	Longitude    string  `json:"longitude"`
	Website      *string `json:"website"`
	LinkedInURL  *string `json:"linkedin_url"`
}

func toCitySpace(cs dirbus.CitySpace) CitySpace {
	return CitySpace{
		IDSpace:      strconv.FormatInt(cs.SpaceID, 10),
		SpaceName:    cs.SpaceName,
		SpaceURL:     cs.SpaceSlug,
		SpaceAddress: cs.Address,
		IDCity:       strconv.FormatInt(cs.CityID, 10),
		CityName:     cs.CityName,
		CitySlug:     cs.CitySlug,
		Latitude:     cs.Latitude,
		Longitude:    cs.Longitude,
		Website:      cs.Website,
		LinkedInURL:  cs.LinkedInURL,
	}
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// The internal models (docs/internal-api.md) are dirapi's, which the jobs
// service's client decodes.

func toResolution(r dirbus.Resolution) dirapi.Resolution {
	out := dirapi.Resolution{Result: r.Result}
	switch r.Result {
	case dirbus.Resolved:
		// The store reads numeric(8,6) as text; it always parses.
		lat, _ := strconv.ParseFloat(r.City.Latitude, 64)
		lon, _ := strconv.ParseFloat(r.City.Longitude, 64)
		out.City = &dirapi.City{ID: r.City.ID, Name: r.City.Name, Slug: r.City.Slug, Confirmed: r.City.Confirmed,
			Latitude: lat, Longitude: lon, CountryCode: r.City.CountryCode}
	case dirbus.Ambiguous:
		out.Candidates = mapSlice(r.Candidates, func(c dirbus.City) dirapi.Candidate {
			return dirapi.Candidate{ID: c.ID, Name: c.Name, Slug: c.Slug}
		})
	}
	return out
}

func toCatalog(c dirbus.Catalog) dirapi.Catalog {
	return dirapi.Catalog{
		Cities: mapSlice(c.Cities, func(c dirbus.CatalogCity) dirapi.City { return dirapi.City(c) }),
		Spaces: mapSlice(c.Spaces, func(s dirbus.SpaceFacts) dirapi.Space { return dirapi.Space(s) }),
	}
}
