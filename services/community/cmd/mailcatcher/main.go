// Command mailcatcher is a local SMTP server that writes every message it
// receives as an .eml file into MAILCATCHER_DIR, so that `make run` users can
// open the newsletter confirmation mail. Development only: it accepts any
// sender and recipient, without TLS or authentication.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/service"
)

type catcherConfig struct {
	config.Base
	Addr string `env:"MAILCATCHER_ADDR" envDefault:"127.0.0.1:1025"`
	Dir  string `env:"MAILCATCHER_DIR" envDefault:".run/mail"`
}

func (c catcherConfig) Validate() error {
	var unset error
	if c.Addr == "" || c.Dir == "" {
		unset = errors.New("MAILCATCHER_ADDR and MAILCATCHER_DIR must be set")
	}
	return errors.Join(c.Base.Validate(), unset)
}

func main() { service.Main("mailcatcher", run) }

func run(ctx context.Context, log *slog.Logger) error {
	return service.RunTool(ctx, log, service.Spec{}, func(ctx context.Context, _ *pgxpool.Pool, cfg *catcherConfig) error {
		c, err := mailcatcher.New(cfg.Dir, log)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.Addr, err)
		}
		log.Info("mailcatcher started", "addr", ln.Addr().String(), "dir", cfg.Dir)
		return c.Serve(ctx, ln)
	})
}
