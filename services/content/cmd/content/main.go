// Command content serves the blog: GET /v2/blog and the public feed
// GET /v2/vine/blog.
package main

import (
	"context"
	"errors"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/content/internal/app/blogapp"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

func main() {
	spec := service.Spec{Name: "content", Schema: "content", Migrations: migrations.FS, Changes: []string{scopes.Blog}}
	service.Serve(spec, func(ctx context.Context, p *service.Process, cfg *appConfig) error {
		v2 := p.API.App.Group("/v2", p.Codec.Middleware())
		blogapp.Routes(v2, postbus.New(postdb.New(p.Pool).WithReads(p.Reads), nil), blogapp.Config{PublicBaseURL: cfg.PublicBaseURL, FeedMaxAge: cfg.FeedMaxAge})
		return nil
	})
}

type appConfig struct {
	config.API
	// PublicBaseURL is the public origin the feed's links start with.
	PublicBaseURL string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	// FeedMaxAge is the feed's Cache-Control max-age in seconds.
	FeedMaxAge int `env:"FEED_MAX_AGE_SECONDS" envDefault:"60"`
}

func (c appConfig) Validate() error {
	errs := []error{c.API.Validate(), config.HTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL)}
	if c.FeedMaxAge < 0 || c.FeedMaxAge > 86400 {
		errs = append(errs, errors.New("FEED_MAX_AGE_SECONDS must be between 0 and 86400"))
	}
	return errors.Join(errs...)
}
