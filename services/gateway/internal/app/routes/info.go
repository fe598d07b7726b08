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
	feeds := Feeds(base)
	return func(c *fiber.Ctx) error {
		list := make([]routeInfo, 0, len(Table))
		for _, r := range Table {
			ri := routeInfo{Method: r.Method, Path: DocPath(r.Path), Auth: "public", Scopes: []string{}, Write: r.Write, RateLimited: limited(r)}
			switch {
			case !r.Public():
				ri.Auth, ri.Scopes = "key", r.Scopes
			case r.KeyScopes != nil:
				ri.Auth, ri.Scopes = "optional_key", r.KeyScopes
			}
			list = append(list, ri)
		}
		return web.OK(c, http.StatusOK, fiber.Map{
			"name": "coworkjobs API", "version": version,
			"openapi_url": base + "/v2/openapi.json", "routes": list,
			"feeds": feeds, "sitemap_url": base + "/sitemap.xml",
		})
	}
}

// Feed is one public feed in one format, as GET /v2 lists it.
type Feed struct {
	Title string `json:"title"`
	Type  string `json:"type"` // the media type, as <link rel="alternate"> says it
	URL   string `json:"url"`
}

// Feeds are the public feeds in the standard formats, and the aggregators'.
func Feeds(base string) []Feed {
	var out []Feed
	for _, f := range []struct{ path, title string }{{"/v2/vine/jobs", "Jobs"}, {"/v2/vine/events", "Events"}, {"/v2/vine/blog", "Blog"}} {
		out = append(out,
			Feed{f.title + " (RSS)", "application/rss+xml", base + f.path + "?format=rss"},
			Feed{f.title + " (Atom)", "application/atom+xml", base + f.path + "?format=atom"},
			Feed{f.title + " (JSON Feed)", "application/feed+json", base + f.path + "?format=json"})
	}
	return append(out,
		Feed{"Jobs for Indeed", "application/xml", base + "/feeds/jobs.xml?format=indeed"},
		Feed{"Jobs for Jooble", "application/xml", base + "/feeds/jobs.xml?format=jooble"})
}

// Robots answers GET /robots.txt: crawlers may read everything but the
// poster's pages (their links are capabilities), and the sitemap is named.
func Robots(publicBaseURL string) fiber.Handler {
	body := "User-agent: *\nDisallow: /jobs/edit\nDisallow: /jobs/unpublish\nDisallow: /jobs/pay\n" +
		"Disallow: /jobs/publish\nDisallow: /jobs/pause\nDisallow: /jobs/resume\nDisallow: /jobs/relist\nDisallow: /alerts/\n\n" +
		"Sitemap: " + strings.TrimRight(publicBaseURL, "/") + "/sitemap.xml\n"
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
		return c.Status(http.StatusOK).SendString(body)
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
