// Package blogapp answers the public blog routes: GET /v2/blog (a page of
// posts, or one post by slug) and GET /v2/vine/blog (the lightweight feed).
package blogapp

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// Config is what the handlers need besides the business layer.
type Config struct {
	// PublicBaseURL is the public origin that post URLs in the feed start with.
	PublicBaseURL string
	// FeedMaxAge is the Cache-Control max-age of the feed, in seconds.
	FeedMaxAge int
}

type handlers struct {
	bus *postbus.Business
	cfg Config
}

// Routes mounts the blog routes on r, which must already sit behind the
// identity middleware (the gateway forwards public routes with a public identity).
func Routes(r fiber.Router, bus *postbus.Business, cfg Config) {
	cfg.PublicBaseURL = strings.TrimRight(cfg.PublicBaseURL, "/")
	if cfg.FeedMaxAge <= 0 {
		cfg.FeedMaxAge = 60
	}
	h := &handlers{bus: bus, cfg: cfg}
	r.Get("/blog", h.blog)
	r.Get("/vine/blog", h.feed)
}
