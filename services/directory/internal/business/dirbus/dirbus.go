// Package dirbus holds the directory's rules: which cities and spaces are
// public, how a city name resolves to one city, and what a space-scoped key
// may see. It declares the storage it needs (Storer) and its sentinel errors.
package dirbus

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/geo"
)

// Sentinel errors the handlers map to envelope codes.
var (
	ErrNotFound = errors.New("not found")
)

// MaxCandidates bounds the candidates of an ambiguous resolution.
const MaxCandidates = 10

// City is one city of the directory. Coordinates are decimal text, exactly
// as stored, so no float formatting ever changes them.
type City struct {
	ID          int64
	Name        string
	Slug        string
	CountryCode string
	Latitude    string
	Longitude   string
	Confirmed   bool
}

// Space is the public view of a confirmed space.
type Space struct {
	ID        int64
	Name      string
	Slug      string
	Address   string
	Latitude  string
	Longitude string
	CityID    int64
	CityName  string
	// DistanceKm is the great-circle distance to SpaceFilter.Near (nil
	// without it).
	DistanceKm *float64
}

// CitySpace is a confirmed space with its city's metadata; Latitude and
// Longitude are the city's.
type CitySpace struct {
	SpaceID     int64
	SpaceName   string
	SpaceSlug   string
	Address     string
	CityID      int64
	CityName    string
	CitySlug    string
	Latitude    string
	Longitude   string
	Website     *string
	LinkedInURL *string
}

// SpaceFacts is what another service needs to know about a space: its
// names, whether it is confirmed and Pro, and its city (dirapi.Space on the
// wire, field for field).
type SpaceFacts struct {
	ID               int64
	Name, Slug       string
	Confirmed, IsPro bool
	CityID           int64
}

// AdminSpace is a space an address administers, with its role there
// (owner, admin or editor): the dashboard's membership.
type AdminSpace struct {
	SpaceFacts
	Role string
}

// CatalogCity is one city of the internal catalog.
type CatalogCity struct {
	ID          int64
	Name        string
	Slug        string
	Confirmed   bool
	Latitude    float64
	Longitude   float64
	CountryCode string
}

// Catalog lists every city and space, confirmed or not.
type Catalog struct {
	Cities []CatalogCity
	Spaces []SpaceFacts
}

// CityFilter selects confirmed cities; empty fields do not filter.
type CityFilter struct {
	Slug   string // exact slug
	Search string // partial name, accent- and case-insensitive
}

// SpaceFilter selects confirmed spaces; empty fields do not filter.
type SpaceFilter struct {
	CitySlug string
	SpaceID  int64     // a space-scoped key's own space
	Near     *geo.Near // within a radius, nearest first
}

// Resolution outcomes.
const (
	Resolved  = "resolved"
	Ambiguous = "ambiguous"
	NotFound  = "not_found"
)

// Resolution is the answer to "which city is this?".
type Resolution struct {
	Result     string
	City       City
	Candidates []City
}

// Storer is the storage the directory needs.
type Storer interface {
	QueryCities(ctx context.Context, f CityFilter) ([]City, error)
	QuerySpaces(ctx context.Context, f SpaceFilter) ([]Space, error)
	QueryCitySpaces(ctx context.Context) ([]CitySpace, error)
	CityByID(ctx context.Context, id int64) (City, error)
	// ConfirmedCitiesByName returns up to limit confirmed cities whose folded
	// name equals (prefix=false) or starts with (prefix=true) the folded name,
	// sorted by name.
	ConfirmedCitiesByName(ctx context.Context, name string, prefix bool, limit int) ([]City, error)
	SpaceFacts(ctx context.Context, id int64) (SpaceFacts, error)
	// AdminSpaces lists the spaces email administers (compared without
	// regard to case), by space id.
	AdminSpaces(ctx context.Context, email string) ([]AdminSpace, error)
	// SpaceBySlug returns a space's facts by its slug, or ErrNotFound.
	SpaceBySlug(ctx context.Context, slug string) (SpaceFacts, error)
	Catalog(ctx context.Context) (Catalog, error)
}

// Business applies the directory's rules over a Storer.
type Business struct {
	store Storer
}

// New returns the directory's rules over a store.
func New(store Storer) *Business { return &Business{store: store} }

// Cities lists confirmed cities sorted by name.
func (c *Business) Cities(ctx context.Context, f CityFilter) ([]City, error) {
	cities, err := c.store.QueryCities(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("query cities: %w", err)
	}
	return cities, nil
}

// Spaces lists confirmed spaces (of confirmed cities). A caller whose key is
// scoped to a space sees only that space: spaceID narrows the list rather
// than failing, since a list never names another space.
func (c *Business) Spaces(ctx context.Context, f SpaceFilter) ([]Space, error) {
	spaces, err := c.store.QuerySpaces(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("query spaces: %w", err)
	}
	return spaces, nil
}

// CitySpaces lists every confirmed space with its city; never narrowed by a
// space-scoped key.
func (c *Business) CitySpaces(ctx context.Context) ([]CitySpace, error) {
	rows, err := c.store.QueryCitySpaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("query city spaces: %w", err)
	}
	return rows, nil
}

// ResolveCityID looks a city up by id, confirmed or not (the caller decides).
func (c *Business) ResolveCityID(ctx context.Context, id int64) (Resolution, error) {
	city, err := c.store.CityByID(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return Resolution{Result: NotFound}, nil
	case err != nil:
		return Resolution{}, fmt.Errorf("city by id: %w", err)
	}
	return Resolution{Result: Resolved, City: city}, nil
}

// ResolveCityName resolves a name among confirmed cities: an exact
// (accent- and case-insensitive) match first; otherwise a prefix match. One
// match resolves; several are ambiguous and come back as candidates.
func (c *Business) ResolveCityName(ctx context.Context, name string) (Resolution, error) {
	name = strings.Join(strings.Fields(name), " ")
	if name == "" {
		return Resolution{Result: NotFound}, nil
	}
	for _, prefix := range []bool{false, true} {
		cities, err := c.store.ConfirmedCitiesByName(ctx, name, prefix, MaxCandidates)
		if err != nil {
			return Resolution{}, fmt.Errorf("cities by name: %w", err)
		}
		switch len(cities) {
		case 0:
			continue
		case 1:
			return Resolution{Result: Resolved, City: cities[0]}, nil
		default:
			return Resolution{Result: Ambiguous, Candidates: cities}, nil
		}
	}
	return Resolution{Result: NotFound}, nil
}

// SpaceFacts returns a space's facts, or ErrNotFound.
func (c *Business) SpaceFacts(ctx context.Context, id int64) (SpaceFacts, error) {
	f, err := c.store.SpaceFacts(ctx, id)
	if err != nil {
		return SpaceFacts{}, fmt.Errorf("space facts: %w", err)
	}
	return f, nil
}

// SpaceBySlug returns a space's facts by its slug, or ErrNotFound.
func (c *Business) SpaceBySlug(ctx context.Context, slug string) (SpaceFacts, error) {
	f, err := c.store.SpaceBySlug(ctx, slug)
	if err != nil {
		return SpaceFacts{}, fmt.Errorf("space by slug: %w", err)
	}
	return f, nil
}

// Catalog returns every city and space with their flags.
func (c *Business) Catalog(ctx context.Context) (Catalog, error) {
	cat, err := c.store.Catalog(ctx)
	if err != nil {
		return Catalog{}, fmt.Errorf("catalog: %w", err)
	}
	return cat, nil
}

// AdminSpaces lists the spaces an address administers, with its role in
// each. An address that administers none has an empty list: the caller may
// not tell it apart from an unknown one.
func (b *Business) AdminSpaces(ctx context.Context, email string) ([]AdminSpace, error) {
	return b.store.AdminSpaces(ctx, strings.TrimSpace(email))
}
