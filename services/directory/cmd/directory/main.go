// Command directory serves cities, spaces and city_spaces, and the internal
// look-ups the jobs service makes while creating a job.
package main

import (
	"context"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/app/dirapp"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus/stores/dirdb"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

func main() {
	spec := service.Spec{Name: "directory", Schema: "directory", Migrations: migrations.FS, Changes: []string{scopes.Directory}}
	service.Serve(spec, func(ctx context.Context, p *service.Process, _ *config.API) error {
		dirapp.Routes(p.API.App, dirapp.Config{Bus: dirbus.New(dirdb.New(p.Pool)), Codec: p.Codec})
		return nil
	})
}
