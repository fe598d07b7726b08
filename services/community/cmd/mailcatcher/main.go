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
	"os"
	"os/signal"
	"syscall"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
)

type catcherConfig struct {
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	Addr     string `env:"MAILCATCHER_ADDR" envDefault:"127.0.0.1:1025"`
	Dir      string `env:"MAILCATCHER_DIR" envDefault:".run/mail"`
}

func (c catcherConfig) Validate() error {
	if c.Addr == "" || c.Dir == "" {
		return errors.New("MAILCATCHER_ADDR and MAILCATCHER_DIR must be set")
	}
	return nil
}

func main() {
	log := logx.New("mailcatcher", os.Getenv("LOG_LEVEL"))
	if err := run(context.Background(), log); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	var cfg catcherConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
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
}
