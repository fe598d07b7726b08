package tests

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// The reach routes outside /v2 go to the jobs service and are named by the
// jobs' versions: a 304 without the backend, a streamed sitemap kept once
// relayed whole, and a kept embed still carries its cross-origin headers.
func TestReachRoutesCached(t *testing.T) {
	ctx := context.Background()
	rdb, err := redisx.Open(cacheRedis)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	srv := web.New(webConfig(), logx.NewTo(io.Discard, "jobs", "error"), "jobs")
	srv.App.Get("/sitemap.xml", codec.Middleware(), func(c *fiber.Ctx) error {
		served.Add(1)
		c.Set(fiber.HeaderContentType, "application/xml; charset=utf-8")
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			_, _ = w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := range 3000 {
				_, _ = w.WriteString("<url><loc>http://gateway.test/jobs/a-" + strconv.Itoa(i) + "</loc><lastmod>2026-11-20T10:00:00Z</lastmod></url>\n")
				_ = w.Flush()
			}
			_, _ = w.WriteString("</urlset>\n")
		})
		return nil
	})
	srv.App.Get("/embed/jobs.js", codec.Middleware(), func(c *fiber.Ctx) error {
		served.Add(1)
		c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
		return c.SendString("(function(){})();\n")
	})
	g := startGateway(t, gatewayOpts{redisURL: cacheRedis, readLimit: 1000, publicRead: 1000, cacheBytes: 4 << 20, backendURL: listen(t, srv)})
	if err := changes.New(rdb, g.prefix).Ensure(ctx, scopes.Jobs); err != nil {
		t.Fatal(err)
	}
	get := func(path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", g.base+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	r, body := get("/sitemap.xml?part=1")
	etag := r.Header.Get("ETag")
	if r.StatusCode != 200 || etag == "" || len(body) < 100000 || served.Load() != 1 {
		t.Fatalf("sitemap: %d %q %d bytes, served %d", r.StatusCode, etag, len(body), served.Load())
	}
	if r, _ := get("/sitemap.xml?part=1", "If-None-Match", etag); r.StatusCode != 304 || served.Load() != 1 {
		t.Fatalf("If-None-Match: %d, served %d", r.StatusCode, served.Load())
	}
	if r, b := get("/sitemap.xml?part=1"); r.StatusCode != 200 || len(b) != len(body) || served.Load() != 1 {
		t.Fatalf("kept sitemap: %d %d bytes, served %d", r.StatusCode, len(b), served.Load())
	}
	// Another query is another answer.
	if r, _ := get("/sitemap.xml?part=2", "If-None-Match", etag); r.StatusCode != 200 || served.Load() != 2 {
		t.Fatalf("part 2: %d, served %d", r.StatusCode, served.Load())
	}
	for i := range 2 {
		r, _ := get("/embed/jobs.js?space=a")
		if r.StatusCode != 200 || r.Header.Get("Cross-Origin-Resource-Policy") != "cross-origin" ||
			r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Set-Cookie") != "" || served.Load() != 3 {
			t.Fatalf("embed %d: %d %v, served %d", i, r.StatusCode, r.Header, served.Load())
		}
	}
}
