// Package geo reads the near=LAT,LON&radius_km=R filter of the discovery
// routes and turns it into the bounding box an index can serve; the exact
// great-circle distance is computed by the database (docs/search.md).
package geo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxRadiusKm bounds radius_km.
const MaxRadiusKm = 500

// earthRadiusKm is the mean Earth radius (IUGG), the one the SQL uses.
const earthRadiusKm = 6371.0088

// Near is a point and a radius.
type Near struct {
	Lat, Lon, RadiusKm float64
}

// Parse reads near ("LAT,LON") and radius_km; both or neither. It returns
// every problem, naming the parameter; ok is false when neither was given.
func Parse(near, radius string) (n Near, ok bool, problems []string) {
	if near == "" && radius == "" {
		return Near{}, false, nil
	}
	if near == "" {
		return Near{}, false, []string{"radius_km needs near"}
	}
	lat, lon, found := strings.Cut(near, ",")
	var err1, err2 error
	n.Lat, err1 = strconv.ParseFloat(strings.TrimSpace(lat), 64)
	n.Lon, err2 = strconv.ParseFloat(strings.TrimSpace(lon), 64)
	if !found || err1 != nil || err2 != nil || math.IsNaN(n.Lat) || math.IsNaN(n.Lon) ||
		n.Lat < -90 || n.Lat > 90 || n.Lon < -180 || n.Lon > 180 {
		problems = append(problems, "near must be LAT,LON in decimal degrees (latitude -90 to 90, longitude -180 to 180), e.g. 52.52,13.405")
	}
	if radius == "" {
		problems = append(problems, "near needs radius_km")
	} else if r, err := strconv.ParseFloat(radius, 64); err != nil || math.IsNaN(r) || r <= 0 || r > MaxRadiusKm {
		problems = append(problems, fmt.Sprintf("radius_km must be a number above 0 and at most %d", MaxRadiusKm))
	} else {
		n.RadiusKm = r
	}
	if len(problems) > 0 {
		return Near{}, false, problems
	}
	return n, true, nil
}

// Box is the smallest latitude/longitude box holding the circle: what a
// GiST index on point(lon, lat) answers before the exact distance is
// checked. Near a pole or across the antimeridian it spans every longitude.
func (n Near) Box() (minLon, minLat, maxLon, maxLat float64) {
	dLat := n.RadiusKm / earthRadiusKm * 180 / math.Pi
	minLat, maxLat = math.Max(n.Lat-dLat, -90), math.Min(n.Lat+dLat, 90)
	minLon, maxLon = -180, 180
	if minLat > -90 && maxLat < 90 {
		// the widest longitude span of the circle is at its extreme latitude
		dLon := math.Asin(math.Min(1, math.Sin(n.RadiusKm/earthRadiusKm)/math.Cos(n.Lat*math.Pi/180))) * 180 / math.Pi
		if n.Lon-dLon >= -180 && n.Lon+dLon <= 180 {
			minLon, maxLon = n.Lon-dLon, n.Lon+dLon
		}
	}
	return minLon, minLat, maxLon, maxLat
}

// DistanceKm is the great-circle (haversine) distance, as the SQL computes it.
func DistanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad/2, (lon2-lon1)*rad/2
	h := math.Sin(dLat)*math.Sin(dLat) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon)*math.Sin(dLon)
	return 2 * earthRadiusKm * math.Asin(math.Min(1, math.Sqrt(h)))
}
