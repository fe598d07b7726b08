package routes

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Info answers GET /v2 from the route table; limited says whether a route's
// requests are counted against a budget with the gateway's configuration.
func Info(version, publicBaseURL string, limited func(Route) bool) fiber.Handler {
	type routeInfo struct {
		Method      string   `json:"method"`
		Path        string   `json:"path"`
		Auth        string   `json:"auth"`
		Scopes      []string `json:"scopes"`
		Write       bool     `json:"write"`
		RateLimited bool     `json:"rate_limited"`
	}
	base := strings.TrimRight(publicBaseURL, "/")
	return func(c *fiber.Ctx) error {
		list := make([]routeInfo, 0, len(Table))
		for _, r := range Table {
			ri := routeInfo{Method: r.Method, Path: DocPath(r.Path), Auth: "public", Scopes: []string{}, Write: r.Write, RateLimited: limited(r)}
			if !r.Public() {
				ri.Auth, ri.Scopes = "key", r.Scopes
			}
			list = append(list, ri)
		}
		return web.OK(c, http.StatusOK, fiber.Map{
			"name": "coworkjobs API", "version": version,
			"openapi_url": base + "/v2/openapi.json", "routes": list,
		})
	}
}

// DocPath writes a Fiber route path as the OpenAPI document does:
// /v2/jobs/:id_job<int> is /v2/jobs/{id_job}.
func DocPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			name, _, _ := strings.Cut(s[1:], "<")
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}
