package tests

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// The gateway's own cost per request is what it adds to the HTTP hop: these
// two benchmarks send the same keyed GET to the same constant backend, once
// through the whole gateway as make bench and production run it (key check
// from the key cache, read limit, signing, spans, metrics, no access log,
// headers) and once through a bare fasthttp proxy. Everything runs in this
// process, so ns/op and allocs/op cover client, gateway and backend alike;
// the difference between the two is the gateway's.
func BenchmarkForwardReadGateway(b *testing.B) {
	g := startGateway(b, gatewayOpts{backendURL: constBackend(b), readLimit: 1 << 30, noAccessLog: true, cacheTTL: 10 * time.Second})
	_, raw := g.newKey(b, keybus.NewKey{Scopes: []string{"read"}})
	benchGET(b, g.base, raw)
}

func BenchmarkForwardReadBareHop(b *testing.B) {
	backend := strings.TrimPrefix(constBackend(b), "http://")
	client := &fasthttp.HostClient{Addr: backend, MaxConns: 512}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		c.Request().SetHost(backend)
		return client.DoTimeout(c.Request(), c.Response(), 5*time.Second)
	})
	benchGET(b, serveFiber(b, app), "")
}

// constBackend answers every request with the same JSON body, about the size
// of a page of jobs, without reading the identity, so both benchmarks pay the
// same backend.
func constBackend(b *testing.B) string {
	body := []byte(`{"success":true,"status":200,"data":[` + strings.Repeat(`{"title":"Community host","company":"Bench Coworking","city":"berlin","tags":["community","events"],"description":"<p>Welcome members, run events and keep the desk.</p><ul><li>Community</li></ul>"},`, 40) + `{}]}`)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Use(func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	return serveFiber(b, app)
}

func serveFiber(b *testing.B, app *fiber.App) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

// benchGET sends GET /v2/jobs?city=… from 32 connections at once, as row a of
// make bench does, and fails on any answer but 200.
func benchGET(b *testing.B, base, key string) {
	addr := strings.TrimPrefix(base, "http://")
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 32}
	b.ReportAllocs()
	b.SetParallelism(16) // 32 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		for pb.Next() {
			req.SetRequestURI(base + "/v2/jobs?city=berlin&job_type=fulltime&page=1&per_page=20")
			if key != "" {
				req.Header.Set("X-API-Key", key)
			}
			if err := client.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
			if resp.StatusCode() != fiber.StatusOK {
				b.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				return
			}
		}
	})
}
