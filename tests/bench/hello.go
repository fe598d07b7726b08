package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// serveHello is the HTTP ceiling: a bare Fiber app answering a constant, run
// as its own process (`bench hello ADDR`) so that it competes for the cores
// as the services do.
func serveHello(addr string) error {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("Hello, World!") })
	return listenUntilSignal(app, addr)
}

// listenUntilSignal serves app on addr until SIGINT or SIGTERM.
func listenUntilSignal(app *fiber.App, addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()
	return app.Listen(addr)
}

// startSelf runs this program again with args (`hello ADDR`, `proxy ADDR
// BACKEND`) and waits until url answers.
func startSelf(ctx context.Context, url string, args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, url); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s: %w", args[0], err)
	}
	return cmd, nil
}

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
