package web_test

import (
	"io"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// BenchmarkRequestStrings prices Fiber's Immutable (every string a handler
// gets is its own copy) on a keyed list request through the whole middleware
// chain of a service (tracing, request id, metrics) and a handler that reads
// what the jobs list reads: a route with its query parameters and headers.
// "views" is Fiber's default, which the services no longer use.
func BenchmarkRequestStrings(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []web.Option
	}{{"copies", nil}, {"views", []web.Option{web.MutableStrings()}}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := web.New(testConfig(), logx.NewTo(io.Discard, "bench", "error"), "bench", bc.opts...)
			srv.App.Use(metrics.New().Middleware())
			srv.App.Get("/v2/jobs", func(c *fiber.Ctx) error {
				_, _ = c.Query("city"), c.Query("job_type")
				_, _ = c.Get("X-Identity"), c.Get("Accept")
				return web.OK(c, 200, fiber.Map{"jobs": []int{}})
			})
			h := srv.App.Handler()
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod("GET")
				ctx.Request.SetRequestURI("/v2/jobs?city=12&job_type=full-time&limit=20")
				ctx.Request.Header.Set("X-Identity", "v1.eyJrIjoxMiwicyI6WyJyZWFkIl19.c2lnbmF0dXJl")
				ctx.Request.Header.Set("Accept", "application/json")
				ctx.Request.Header.Set("User-Agent", "bench")
				h(&ctx)
				if ctx.Response.StatusCode() != 200 {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
			}
		})
	}
}
