package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// serveProxy is the proxy-hop ceiling: a Fiber app that forwards every
// request to backend over a pooled fasthttp client and relays the answer,
// with nothing else (no key, limit, span or metrics). Run as its own process
// (`bench proxy ADDR BACKEND`), it shows what one HTTP hop costs on this
// machine, which no gateway can undercut.
func serveProxy(addr, backend string) error {
	client := &fasthttp.HostClient{Addr: backend, MaxConns: 512, NoDefaultUserAgentHeader: true,
		DisableHeaderNamesNormalizing: true, DisablePathNormalizing: true}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		req := c.Request()
		req.SetHost(backend)
		resp := c.Response()
		if err := client.DoTimeout(req, resp, 10*time.Second); err != nil {
			return err
		}
		resp.Header.Del(fiber.HeaderConnection)
		return nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()
	return app.Listen(addr)
}

// startProxy runs this program again as the bare proxy in front of backend.
func startProxy(ctx context.Context, addr, backend string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "proxy", addr, backend)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}
