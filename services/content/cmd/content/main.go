// Command content serves the blog: GET /v2/blog and the public feed
// GET /v2/vine/blog.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/content/internal/app/blogapp"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

const schema = "content"

func main() { service.Main(schema, run) }

func run(ctx context.Context, log *slog.Logger) error {
	spec := service.Spec{Name: schema, Schema: schema, Migrations: migrations.FS}
	return service.Run(ctx, log, spec, func(ctx context.Context, p *service.Process, cfg *appConfig) error {
		v2 := p.API.App.Group("/v2", p.Codec.Middleware())
		blogapp.Routes(v2, postbus.New(postdb.New(p.Pool), nil), blogapp.Config{PublicBaseURL: cfg.PublicBaseURL, FeedMaxAge: cfg.FeedMaxAge})
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
	errs := []error{c.API.Validate()}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PUBLIC_BASE_URL %q must be an absolute http(s) URL", c.PublicBaseURL))
	}
	if c.FeedMaxAge < 0 || c.FeedMaxAge > 86400 {
		errs = append(errs, errors.New("FEED_MAX_AGE_SECONDS must be between 0 and 86400"))
	}
	return errors.Join(errs...)
}
