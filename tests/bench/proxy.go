package main

import (
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
	return listenUntilSignal(app, addr)
}
