// Package jobapp is the HTTP layer of the jobs service: GET and POST
// /v2/jobs, GET /v2/jobs/{id_job}, the transitions POST /v2/jobs/{event} and the public feed GET /v2/vine/jobs.
package jobapp

import (
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// Config wires the handlers.
type Config struct {
	Log   *slog.Logger
	Bus   *jobbus.Business
	Codec *identity.Codec
	// PaginationEnabled turns on server-side pagination of GET /v2/jobs.
	PaginationEnabled bool
	// StreamTimeout bounds a streamed (unpaginated) listing; default 60s.
	StreamTimeout time.Duration
	// Registry receives the job write counters (nil: not exported).
	Registry prometheus.Registerer
	// Totals reports the listing totals' memo (nil: not exported).
	Totals interface{ TotalCounts() (hits, misses int64) }
	// Announcements and AggregatorPlans make the owner's distribution
	// record of GET /v2/jobs/{id_job} (nil: no notices in it).
	Announcements   indexbus.Announcements
	AggregatorPlans []int
	// Stats counts impressions: the jobs of a list answer (channel
	// api:<key id>) and of the feed (feed); nil counts none.
	Stats Impressions
}

// Impressions counts jobs shown (statsapp.Counter).
type Impressions interface {
	Impression(agent statsbus.Agent, channel string, jobID int64)
}

// Routes mounts the public routes under /v2 behind the identity check.
func Routes(app *fiber.App, cfg Config) {
	if cfg.StreamTimeout <= 0 {
		cfg.StreamTimeout = 60 * time.Second
	}
	h := &handlers{cfg: cfg, bus: cfg.Bus, log: cfg.Log, writes: newWrites(cfg.Registry)}
	registerTotals(cfg.Registry, cfg.Totals)
	v2 := app.Group("/v2", cfg.Codec.Middleware())
	readers := identity.RequireKind(identity.KindLive, identity.KindRestricted)
	writers := identity.RequireKind(identity.KindLive)
	v2.Get("/jobs", readers, h.list)
	v2.Post("/jobs", writers, h.create)
	v2.Post("/jobs/batch", writers, h.batch)
	v2.Get("/jobs/batch/:operation_id", readers, h.batchOperation)
	for _, ev := range jobbus.RouteEvents {
		v2.Post("/jobs/"+string(ev), writers, h.transition(ev))
	}
	v2.Get("/jobs/changes", readers, h.changes)
	v2.Get("/jobs/:id_job<int>", readers, h.get)
	v2.Get("/vine/jobs", h.feed)

	in := app.Group("/internal", cfg.Codec.Middleware(), identity.RequireKind(identity.KindService))
	in.Get("/spaces/:id<int>/jobs", h.spaceJobs)
}
