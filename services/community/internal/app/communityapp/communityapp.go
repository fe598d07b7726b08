// Package communityapp mounts every public route of the community service; the
// command and the HTTP tests build the same app through it.
package communityapp

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/eventapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/feedbackapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/newsletterapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/privacyapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus/stores/feedbackdb"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
)

// Config is what the routes need.
type Config struct {
	Pool           *pgxpool.Pool
	Reads          *pg.Reads // where the events' reads may go (nil: Pool)
	Codec          *identity.Codec
	PublicBaseURL  string
	Signer         *newsletterbus.Signer
	ConsentVersion string
	ResendInterval time.Duration
	// Privacy seals the erasure links of the newsletter's mails and opens
	// the addresses the jobs service hands over.
	Privacy *privacy.Sealer
}

// Routes registers the /v2 routes on app, and the internal privacy routes.
func Routes(app *fiber.App, cfg Config) {
	v2 := app.Group("/v2", cfg.Codec.Middleware())
	eventapp.Routes(v2, eventapp.Config{
		Events: eventbus.New(eventdb.New(cfg.Pool).WithReads(cfg.Reads)), PublicBaseURL: cfg.PublicBaseURL,
	})
	feedbackapp.Routes(v2, feedbackapp.Config{Feedback: feedbackbus.New(feedbackdb.New(cfg.Pool))})
	newsletterapp.Routes(v2, newsletterapp.Config{Newsletter: newsletterbus.New(newsletterdb.New(cfg.Pool), cfg.Signer,
		newsletterbus.Config{ConsentVersion: cfg.ConsentVersion, ResendInterval: cfg.ResendInterval})})
	if cfg.Privacy != nil {
		privacyapp.Routes(app, privacyapp.Config{Codec: cfg.Codec, Sealer: cfg.Privacy, Store: newsletterdb.New(cfg.Pool)})
	}
}
