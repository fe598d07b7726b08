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
	"unicode"
	"unicode/utf8"

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
	in.Get("/catalog", h.catalog)
}

// GET /v2/cities?q=<slug>&search=<partial name>
func (h handlers) cities(c *fiber.Ctx) error {
	var problems []string
	slug := strings.ToLower(textParam(c, "q", &problems))
	search := textParam(c, "search", &problems)
	if len(problems) > 0 {
		return web.Validation("Invalid query parameters", problems)
	}
	cities, err := h.bus.Cities(c.UserContext(), dirbus.CityFilter{Slug: slug, Search: search})
	if err != nil {
		return err
	}
	return web.SendCacheablePrivate(c, mapSlice(cities, toCity), maxAge)
}

// GET /v2/spaces?q=<city slug>&near=LAT,LON&radius_km=R; a space-scoped key
// sees only its own space.
func (h handlers) spaces(c *fiber.Ctx) error {
	var problems []string
	citySlug := strings.ToLower(textParam(c, "q", &problems))
	near, hasNear, p := geo.Parse(textParam(c, "near", &problems), textParam(c, "radius_km", &problems))
	problems = append(problems, p...)
	if len(problems) > 0 {
		return web.Validation("Invalid query parameters", problems)
	}
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
	var problems []string
	args := c.Context().QueryArgs()
	hasID, hasName := args.Has("id"), args.Has("name")
	before := len(problems)
	idText := textParam(c, "id", &problems)
	name := textParam(c, "name", &problems)
	valid := len(problems) == before
	var id int64
	switch {
	case hasID && hasName:
		problems = append(problems, "give either id or name, not both")
	case !hasID && !hasName:
		problems = append(problems, "id or name is required")
	case !valid:
	case hasID:
		n, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || n <= 0 {
			problems = append(problems, "id must be a positive integer")
		}
		id = n
	case hasName && name == "":
		problems = append(problems, "name must not be empty")
	}
	if len(problems) > 0 {
		return web.Validation("Invalid query parameters", problems)
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

// GET /internal/catalog
func (h handlers) catalog(c *fiber.Ctx) error {
	cat, err := h.bus.Catalog(c.UserContext())
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, toCatalog(cat))
}

// textParam reads one optional text query parameter, trimmed. Repeated
// parameters, invalid UTF-8, control characters and over-long values are
// recorded in problems. Unknown parameters are ignored (the gateway may pass
// api_key along).
func textParam(c *fiber.Ctx, name string, problems *[]string) string {
	vals := c.Context().QueryArgs().PeekMulti(name)
	if len(vals) == 0 {
		return ""
	}
	if len(vals) > 1 {
		*problems = append(*problems, name+" must be given at most once")
		return ""
	}
	v := string(vals[0])
	if !utf8.ValidString(v) {
		*problems = append(*problems, name+" must be valid UTF-8 text")
		return ""
	}
	if n := utf8.RuneCountInString(v); n > MaxTextLen {
		*problems = append(*problems, fmt.Sprintf("%s must be at most %d characters (got %d)", name, MaxTextLen, n))
		return ""
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		*problems = append(*problems, name+" must not contain control characters")
		return ""
	}
	return strings.TrimSpace(v)
}
