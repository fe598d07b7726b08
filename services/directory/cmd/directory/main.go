// Command directory serves cities, spaces and city_spaces, and the internal
// look-ups the jobs service makes while creating a job.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/app/dirapp"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus/stores/dirdb"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

const schema = "directory"

type appConfig struct {
	config.Common
	Web web.Config
}

func (c appConfig) Validate() error { return errors.Join(c.Common.Validate(), c.Web.Validate()) }

func main() {
	log := logx.New(schema, os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), log); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	var cfg appConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	shutdownTracing, err := telemetry.Setup(ctx, schema, "", log)
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	pool, err := pg.Open(ctx, cfg.DatabaseURL, schema, pg.Options{MaxConns: cfg.DBMaxConns, Tracer: telemetry.PgxTracer()})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, schema, migrations.FS, log); err != nil {
		return err
	}
	if cfg.MigrateOnly {
		log.Info("migrations applied; MIGRATE_ONLY is set, exiting")
		return nil
	}
	codec, err := identity.NewCodec(cfg.IdentitySecret)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}

	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	srv := web.New(cfg.Web, log, schema)
	srv.AddCheck("postgres", pg.Check(pool))
	srv.App.Use(m.Middleware())
	dirapp.Routes(srv.App, dirapp.Config{
		Bus:   dirbus.New(dirdb.New(pool)),
		Codec: codec,
	})
	srv.Fallback()

	go func() {
		if err := metrics.ServeAdmin(ctx, cfg.Web.AdminAddr, m.Registry, log, metrics.WithReadiness(map[string]metrics.Check{"api": srv.Ready})); err != nil {
			log.Error("admin server", "error", err)
		}
	}()
	return srv.Run(ctx)
}
