// Package dirapp is the directory's HTTP layer: the public /v2 routes the
// gateway forwards (cities, spaces, city_spaces) and the internal look-ups
// other services make (/internal/...).
package dirapp

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
)

// MaxTextLen is the longest query text accepted (in characters).
const MaxTextLen = 200

// maxAge is how long a client may reuse a /v2 list without asking. The lists
// are private to the caller: they were fetched with an API key, and
// /v2/spaces depends on the key's space.
const maxAge = 60

// Config is what the routes need.
type Config struct {
	Bus   *dirbus.Business
	Codec *identity.Codec
}

type handlers struct {
	bus *dirbus.Business
}

// Routes mounts the public routes under /v2 (any verified identity) and the
// internal ones under /internal (service identities only).
func Routes(app *fiber.App, cfg Config) {
	h := handlers{bus: cfg.Bus}

	v2 := app.Group("/v2", cfg.Codec.Middleware())
	v2.Get("/cities", h.cities)
	v2.Get("/spaces", h.spaces)
	v2.Get("/city_spaces", h.citySpaces)

	in := app.Group("/internal", cfg.Codec.Middleware(), identity.RequireKind(identity.KindService))
	in.Get("/cities/resolve", h.resolveCity)
	in.Get("/spaces/:id", h.spaceFacts)
	in.Get("/spaces/by-slug/:slug", h.spaceBySlug)
	in.Get("/catalog", h.catalog)
	in.Get("/admins/spaces", h.adminSpaces)
}

// GET /v2/cities?q=<slug>&search=<partial name>
func (h handlers) cities(c *fiber.Ctx) error {
	q := web.Params(c)
	slug, _ := q.Text("q", MaxTextLen)
	search, _ := q.Text("search", MaxTextLen)
	if err := q.Err(); err != nil {
		return err
	}
	slug = strings.ToLower(slug)
	cities, err := h.bus.Cities(c.UserContext(), dirbus.CityFilter{Slug: slug, Search: search})
	if err != nil {
		return err
	}
	return web.SendCacheablePrivate(c, mapSlice(cities, toCity), maxAge)
}

// GET /v2/spaces?q=<city slug>&near=LAT,LON&radius_km=R; a space-scoped key
// sees only its own space.
func (h handlers) spaces(c *fiber.Ctx) error {
	q := web.Params(c)
	citySlug, _ := q.Text("q", MaxTextLen)
	nearText, _ := q.Text("near", MaxTextLen)
	radius, _ := q.Text("radius_km", MaxTextLen)
	near, hasNear, problems := geo.Parse(nearText, radius)
	for _, p := range problems {
		q.Add(p)
	}
	if err := q.Err(); err != nil {
		return err
	}
	citySlug = strings.ToLower(citySlug)
	var spaceID int64
	if id := identity.From(c); id != nil {
		spaceID = id.SpaceID
	}
	f := dirbus.SpaceFilter{CitySlug: citySlug, SpaceID: spaceID}
	if hasNear {
		f.Near = &near
	}
	spaces, err := h.bus.Spaces(c.UserContext(), f)
	if err != nil {
		return err
	}
	return web.SendCacheablePrivate(c, mapSlice(spaces, toSpace), maxAge)
}

// GET /v2/city_spaces: every confirmed space, whatever the key's space.
func (h handlers) citySpaces(c *fiber.Ctx) error {
	rows, err := h.bus.CitySpaces(c.UserContext())
	if err != nil {
		return err
	}
	return web.SendCacheablePrivate(c, mapSlice(rows, toCitySpace), maxAge)
}

// GET /internal/cities/resolve?id=<int> | ?name=<text>
func (h handlers) resolveCity(c *fiber.Ctx) error {
	q := web.Params(c)
	idText, hasID := q.Text("id", MaxTextLen)
	name, hasName := q.Text("name", MaxTextLen)
	valid := len(q.Problems()) == 0
	var id int64
	switch {
	case hasID && hasName:
		q.Add("give either id or name, not both")
	case !hasID && !hasName:
		q.Add("id or name is required")
	case !valid:
	case hasID:
		n, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || n <= 0 {
			q.Add("id must be a positive integer")
		}
		id = n
	case hasName && name == "":
		q.Add("name must not be empty")
	}
	if err := q.Err(); err != nil {
		return err
	}
	var (
		res dirbus.Resolution
		err error
	)
	if hasID {
		res, err = h.bus.ResolveCityID(c.UserContext(), id)
	} else {
		res, err = h.bus.ResolveCityName(c.UserContext(), name)
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, toResolution(res))
}

// GET /internal/spaces/:id
func (h handlers) spaceFacts(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return web.Validation("Invalid path parameter", []string{"id must be a positive integer"})
	}
	f, err := h.bus.SpaceFacts(c.UserContext(), id)
	if errors.Is(err, dirbus.ErrNotFound) {
		return web.NotFound(fmt.Sprintf("Space %d not found", id))
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, dirapi.Space(f))
}

// GET /internal/admins/spaces?email=<address>
func (h handlers) adminSpaces(c *fiber.Ctx) error {
	q := web.Params(c)
	email, given := q.NonEmptyText("email", 320)
	if !given {
		q.Add("email is required")
	}
	if err := q.Err(); err != nil {
		return err
	}
	spaces, err := h.bus.AdminSpaces(c.UserContext(), email)
	if err != nil {
		return err
	}
	out := make([]dirapi.AdminSpace, 0, len(spaces))
	for _, s := range spaces {
		out = append(out, dirapi.AdminSpace{Space: dirapi.Space(s.SpaceFacts), Role: s.Role})
	}
	return web.OK(c, http.StatusOK, dirapi.AdminSpaces{Spaces: out})
}

// GET /internal/spaces/by-slug/<slug>: the jobs' embed names a space by slug.
func (h handlers) spaceBySlug(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	if slug == "" || len(slug) > MaxTextLen {
		return web.Validation("Invalid path parameter", []string{fmt.Sprintf("slug must be 1 to %d characters", MaxTextLen)})
	}
	f, err := h.bus.SpaceBySlug(c.UserContext(), slug)
	if errors.Is(err, dirbus.ErrNotFound) {
		return web.NotFound("Space not found")
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, dirapi.Space(f))
}

// GET /internal/catalog
func (h handlers) catalog(c *fiber.Ctx) error {
	cat, err := h.bus.Catalog(c.UserContext())
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, toCatalog(cat))
}
