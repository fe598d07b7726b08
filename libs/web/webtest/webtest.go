// Package webtest drives a service's Fiber app in its tests the way a client
// reads it: each request goes through app.Test, each answer is checked against
// the API document and its envelope is decoded, so that the services' test
// packages and the process-level suites read answers one way.
package webtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Envelope is the body every answer shares (web.Envelope), decoded loosely so
// that tests read data and error details in their own shapes.
type Envelope struct {
	Success bool            `json:"success"`
	Status  int             `json:"status"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

// Problems returns the list of problems a 422 answer details, failing t when
// the envelope has no error or its details are not a list of strings.
func (e Envelope) Problems(t testing.TB) []string {
	t.Helper()
	if e.Error == nil {
		t.Fatalf("no error in the envelope (status %d, data %s)", e.Status, e.Data)
	}
	var d []string
	if err := json.Unmarshal(e.Error.Details, &d); err != nil {
		t.Fatalf("details %s: %v", e.Error.Details, err)
	}
	return d
}

// Into decodes the envelope's data into dst, failing t when it cannot.
func (e Envelope) Into(t testing.TB, dst any) {
	t.Helper()
	if err := json.Unmarshal(e.Data, dst); err != nil {
		t.Fatalf("decode data: %v: %s", err, e.Data)
	}
}

// Checker says whether an answer is what the API document promises for the
// request (api/contract's Checker; libs does not depend on the document).
type Checker interface {
	CheckServed(req *http.Request, status int, header http.Header, body []byte) error
}

// Reply is one answer read whole.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
	Env    Envelope // decoded when Body is not a Document
}

// Document reports whether an answer of contentType is a document of its
// own (a feed, a sitemap, a script) rather than the envelope.
func Document(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.HasSuffix(mt, "xml") || mt == "application/feed+json" || mt == "text/javascript"
}

// Do sends req through app and reads the answer. A documented route's answer
// that c refuses is a test error; no answer within 30 s, or a body that is
// neither the envelope nor a Document, ends the test.
func Do(t testing.TB, app *fiber.App, c Checker, req *http.Request) Reply {
	t.Helper()
	res, err := app.Test(req, int((30 * time.Second).Milliseconds()))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	r := Reply{Status: res.StatusCode, Header: res.Header}
	if r.Body, err = io.ReadAll(res.Body); err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	if err := c.CheckServed(req, r.Status, r.Header, r.Body); err != nil {
		t.Errorf("contract: %v", err)
	}
	if len(r.Body) > 0 && !Document(res.Header.Get("Content-Type")) {
		if err := json.Unmarshal(r.Body, &r.Env); err != nil {
			t.Fatalf("%s %s: body is not an envelope: %v: %s", req.Method, req.URL, err, r.Body)
		}
	}
	return r
}

// FuzzQuery fuzzes the query string of a GET on path, starting from seeds:
// check reads the query from a Fiber context the way a handler does.
func FuzzQuery(f *testing.F, path string, seeds []string, check func(t *testing.T, c *fiber.Ctx, query string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	app := fiber.New()
	f.Fuzz(func(t *testing.T, query string) {
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI(path + "?" + query)
		c := app.AcquireCtx(&rc)
		defer app.ReleaseCtx(c)
		check(t, c, query)
	})
}

// Config is a server configuration for tests that drive the app through Do:
// short timeouts, and room for every request a parallel test sends at once
// (app.Test is held to Concurrency like a real connection).
func Config() web.Config {
	return web.Config{HTTPAddr: "127.0.0.1:0", BodyLimitBytes: 1 << 20, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second,
		ShutdownTimeout: time.Second, Concurrency: 1024}
}
