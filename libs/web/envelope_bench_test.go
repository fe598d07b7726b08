package web_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// benchCity is a list element shaped like the directory's (five short strings).
type benchCity struct {
	ID        string `json:"id_city"`
	Name      string `json:"city_name"`
	Slug      string `json:"city_slug"`
	Latitude  string `json:"latitude"`
	Longitude string `json:"longitude"`
}

func benchCities(n int) []benchCity {
	out := make([]benchCity, n)
	for i := range out {
		out[i] = benchCity{ID: "1234", Name: "Berlin", Slug: "berlin", Latitude: "52.5200066", Longitude: "13.4049540"}
	}
	return out
}

// benchCtx runs fn on one reused Fiber context, the way the server does.
func benchCtx(b *testing.B, fn func(c *fiber.Ctx) error) {
	app := fiber.New()
	var fctx fasthttp.RequestCtx
	c := app.AcquireCtx(&fctx)
	defer app.ReleaseCtx(c)
	b.ReportAllocs()
	for b.Loop() {
		c.Response().Reset()
		if err := fn(c); err != nil {
			b.Fatal(err)
		}
		if len(c.Response().Body()) == 0 {
			b.Fatal("empty body")
		}
	}
}

func BenchmarkOKSmall(b *testing.B) {
	data := fiber.Map{"status": "ok"}
	benchCtx(b, func(c *fiber.Ctx) error { return web.OK(c, http.StatusOK, data) })
}

func BenchmarkOKList20(b *testing.B) {
	data := benchCities(20)
	benchCtx(b, func(c *fiber.Ctx) error { return web.OK(c, http.StatusOK, data) })
}

func BenchmarkOKList500(b *testing.B) {
	data := benchCities(500)
	benchCtx(b, func(c *fiber.Ctx) error { return web.OK(c, http.StatusOK, data) })
}

func BenchmarkSendCacheable20(b *testing.B) {
	data := benchCities(20)
	benchCtx(b, func(c *fiber.Ctx) error { return web.SendCacheable(c, data, 60) })
}

// BenchmarkErrorHandlerValidation is the 422 path: a coded error through the
// one error handler.
func BenchmarkErrorHandlerValidation(b *testing.B) {
	h := web.ErrorHandler(logx.NewTo(io.Discard, "bench", "error"))
	verr := web.Validation("Validation failed", []string{"title is required", "tags is required"})
	benchCtx(b, func(c *fiber.Ctx) error { return h(c, verr) })
}
