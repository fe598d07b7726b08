// Command directory serves cities, spaces and city_spaces, and the internal
// look-ups the jobs service makes while creating a job.
package main

import (
	"context"
	"log/slog"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/app/dirapp"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus/stores/dirdb"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

const schema = "directory"

func main() { service.Main(schema, run) }

func run(ctx context.Context, log *slog.Logger) error {
	spec := service.Spec{Name: schema, Schema: schema, Migrations: migrations.FS}
	return service.Run(ctx, log, spec, func(ctx context.Context, p *service.Process, _ *config.API) error {
		dirapp.Routes(p.API.App, dirapp.Config{Bus: dirbus.New(dirdb.New(p.Pool)), Codec: p.Codec})
		return nil
	})
}
