package webtest_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// recorder is a testing.TB that keeps what a helper reports; Fatalf ends
// the goroutine the way t.Fatalf does.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(f, a...))
	runtime.Goexit()
}

// run calls f with a recorder in a goroutine of its own, so that Fatalf can end it.
func run(f func(r *recorder)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r
}

type checker struct{ err error }

func (c checker) CheckServed(*http.Request, int, http.Header, []byte) error { return c.err }

func app() *fiber.App {
	srv := web.New(webtest.Config(), slog.New(slog.DiscardHandler), "webtest")
	srv.App.Get("/ok", func(c *fiber.Ctx) error { return web.OK(c, 200, fiber.Map{"n": 1}) })
	srv.App.Get("/invalid", func(*fiber.Ctx) error { return web.Validation("Validation failed", []string{"a", "b"}) })
	srv.App.Get("/text", func(c *fiber.Ctx) error { return c.SendString("not json") })
	srv.App.Get("/feed", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "application/rss+xml; charset=utf-8")
		return c.SendString(`<rss version="2.0"></rss>`)
	})
	return srv.App
}

func TestDoDecodesTheEnvelope(t *testing.T) {
	a := app()
	var got webtest.Reply
	r := run(func(r *recorder) { got = webtest.Do(r, a, checker{}, httptest.NewRequest("GET", "/ok", nil)) })
	if len(r.errors)+len(r.fatals) != 0 || got.Status != 200 || !got.Env.Success || got.Env.Status != 200 {
		t.Fatalf("reply %+v, reported %v %v", got, r.errors, r.fatals)
	}
	var data struct{ N int }
	got.Env.Into(t, &data)
	if data.N != 1 {
		t.Fatalf("data %s", got.Env.Data)
	}
	got = webtest.Do(t, a, checker{}, httptest.NewRequest("GET", "/invalid", nil))
	if p := got.Env.Problems(t); got.Status != 422 || !slices.Equal(p, []string{"a", "b"}) {
		t.Fatalf("422: %d %v", got.Status, p)
	}
}

func TestDoReportsWhatTheDocumentRefuses(t *testing.T) {
	a := app()
	r := run(func(r *recorder) {
		webtest.Do(r, a, checker{errors.New("no such field")}, httptest.NewRequest("GET", "/ok", nil))
	})
	if len(r.errors) != 1 || len(r.fatals) != 0 {
		t.Fatalf("errors %v, fatals %v: want one contract error", r.errors, r.fatals)
	}
}

func TestDoFailsOnABodyThatIsNotAnEnvelope(t *testing.T) {
	a := app()
	r := run(func(r *recorder) { webtest.Do(r, a, checker{}, httptest.NewRequest("GET", "/text", nil)) })
	if len(r.fatals) != 1 {
		t.Fatalf("fatals %v: want one", r.fatals)
	}
}

// A feed, a sitemap or a script is read as it is.
func TestDoReadsADocument(t *testing.T) {
	a := app()
	var got webtest.Reply
	r := run(func(r *recorder) { got = webtest.Do(r, a, checker{}, httptest.NewRequest("GET", "/feed", nil)) })
	if len(r.fatals)+len(r.errors) != 0 || string(got.Body) != `<rss version="2.0"></rss>` {
		t.Fatalf("fatals %v errors %v body %q", r.fatals, r.errors, got.Body)
	}
}

func TestProblemsFailsWithoutAList(t *testing.T) {
	var env webtest.Envelope
	if r := run(func(r *recorder) { env.Problems(r) }); len(r.fatals) != 1 {
		t.Fatalf("no error: fatals %v", r.fatals)
	}
}

// A Service is built as a process builds it (routes, then the envelope
// fallback) and reached as the gateway reaches it: the identity signed, the
// body sent with its type, the headers set.
func TestServiceSignsAndSends(t *testing.T) {
	svc, err := webtest.NewService("webtest", strings.Repeat("s", 32), checker{}, func(srv *web.Server, codec *identity.Codec) error {
		srv.App.Post("/v2/echo", codec.Middleware(), func(c *fiber.Ctx) error {
			return web.OK(c, 200, fiber.Map{"key": identity.From(c).KeyID, "type": c.Get("Content-Type"), "body": string(c.Body()), "x": c.Get("X-Test")})
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := svc.Do(t, webtest.Request{Method: "POST", Target: "/v2/echo", Body: "a=1", ContentType: "application/x-www-form-urlencoded",
		Identity: &identity.Identity{Kind: identity.KindLive, KeyID: 7}, Header: map[string]string{"X-Test": "yes"}})
	var got struct {
		Key           int64
		Type, Body, X string
	}
	r.Env.Into(t, &got)
	if r.Status != 200 || got.Key != 7 || got.Type != "application/x-www-form-urlencoded" || got.Body != "a=1" || got.X != "yes" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := svc.Do(t, webtest.Request{Method: "POST", Target: "/v2/echo"}); r.Status != 401 {
		t.Fatalf("without an identity: %d %s", r.Status, r.Body)
	}
	if r := svc.Do(t, webtest.Request{Method: "GET", Target: "/v2/nowhere"}); r.Status != 404 || r.Env.Error == nil || r.Env.Error.Code != web.CodeNotFound {
		t.Fatalf("an unknown route: %d %s", r.Status, r.Body)
	}
}
