package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

func testConfig() web.Config {
	return web.Config{HTTPAddr: "127.0.0.1:0", BodyLimitBytes: 2048, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second, RequestTimeout: 300 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second, Concurrency: 64}
}

// start serves srv on a loopback port and returns its base URL and a stop func.
func start(t *testing.T, srv *web.Server) (string, context.CancelFunc, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String(), cancel, done
}

func newServer(t testing.TB) *web.Server {
	srv := web.New(testConfig(), logx.NewTo(io.Discard, "test", "error"), "test")
	srv.App.Get("/panic", func(c *fiber.Ctx) error { panic("boom") })
	srv.App.Get("/plain-error", func(c *fiber.Ctx) error { return errors.New("secret internal detail") })
	srv.App.Get("/slow-query", func(c *fiber.Ctx) error {
		<-c.UserContext().Done() // a query that honours the request deadline
		return c.UserContext().Err()
	})
	srv.App.Post("/echo", func(c *fiber.Ctx) error {
		var body struct {
			Name string `json:"name"`
			N    int    `json:"n"`
		}
		if err := web.DecodeJSON(c, &body); err != nil {
			return err
		}
		return web.OK(c, 201, body)
	})
	srv.App.Get("/feed", func(c *fiber.Ctx) error { return web.SendCacheable(c, fiber.Map{"items": []int{1, 2}}, 60) })
	srv.App.Get("/items/:id<int>", func(c *fiber.Ctx) error { return web.OK(c, 200, c.Params("id")) })
	srv.Fallback()
	return srv
}

type result struct {
	status int
	header http.Header
	env    web.Envelope
	raw    []byte
}

func call(t *testing.T, method, url string, body io.Reader, hdr map[string]string) result {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := result{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.env); err != nil {
			t.Fatalf("%s %s: body is not the envelope: %q", method, url, raw)
		}
	}
	return r
}

func TestErrorsBecomeEnvelopes(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"panic500", "GET", "/panic", "", 500, web.CodeServerError},
		{"uncoded500", "GET", "/plain-error", "", 500, web.CodeServerError},
		{"deadline504", "GET", "/slow-query", "", 504, web.CodeTimeout},
		{"unknown404", "GET", "/nope", "", 404, web.CodeNotFound},
		{"trailingSlash404", "GET", "/feed/", "", 404, web.CodeNotFound},
		{"wrongMethod405", "DELETE", "/echo", "", 405, web.CodeMethodNotAllowed},
		{"badJSON400", "POST", "/echo", `{"name":`, 400, web.CodeBadRequest},
		{"emptyBody400", "POST", "/echo", ``, 400, web.CodeBadRequest},
		{"arrayBody400", "POST", "/echo", `[1]`, 400, web.CodeBadRequest},
		{"twoObjects400", "POST", "/echo", `{"n":1}{"n":2}`, 400, web.CodeBadRequest},
		{"badUTF8400", "POST", "/echo", "{\"name\":\"\xff\"}", 400, web.CodeBadRequest},
		{"wrongType422", "POST", "/echo", `{"n":"x"}`, 422, web.CodeValidation},
		{"tooLarge413", "POST", "/echo", `{"name":"` + strings.Repeat("a", 4096) + `"}`, 413, web.CodePayloadTooLarge},
		{"ok201", "POST", "/echo", `{"name":"a","n":2}`, 201, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, base+tc.path, strings.NewReader(tc.body), map[string]string{"Content-Type": "application/json"})
			if r.status != tc.status || r.env.Status != tc.status {
				t.Fatalf("status %d envelope %d, want %d: %s", r.status, r.env.Status, tc.status, r.raw)
			}
			if tc.code == "" {
				if !r.env.Success {
					t.Fatalf("want success: %s", r.raw)
				}
				return
			}
			if r.env.Success || r.env.Error == nil || r.env.Error.Code != tc.code {
				t.Fatalf("want code %s: %s", tc.code, r.raw)
			}
			if strings.Contains(string(r.raw), "secret internal detail") || strings.Contains(string(r.raw), "boom") {
				t.Fatalf("internal error text leaked: %s", r.raw)
			}
		})
	}
}

func TestWrongMethodListsAllowed(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	r := call(t, "PUT", base+"/echo", nil, nil)
	if r.status != 405 || r.header.Get("Allow") != "POST" {
		t.Fatalf("status %d Allow %q", r.status, r.header.Get("Allow"))
	}
	// A route with a parameter: its paths are known, others are not.
	for path, want := range map[string]int{"/items/12": 405, "/items/x": 404, "/items/99999999999999999999": 404, "/items/": 404, "/items/12/more": 404} {
		for _, m := range []string{"PUT", "PROPFIND"} {
			r := call(t, m, base+path, nil, nil)
			status := want
			if m == "PROPFIND" {
				status = 405 // an unknown method is 405 everywhere, with Allow where the path is known
			}
			if r.status != status || (want == 405) != (r.header.Get("Allow") == "GET, HEAD") {
				t.Errorf("%s %s: status %d Allow %q, want %d", m, path, r.status, r.header.Get("Allow"), want)
			}
		}
	}
}

func TestValidationDetailsIsArray(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	r := call(t, "POST", base+"/echo", strings.NewReader(`{"n":true}`), map[string]string{"Content-Type": "application/json"})
	if _, ok := r.env.Error.Details.([]any); !ok {
		t.Fatalf("details is not an array: %s", r.raw)
	}
}

func TestRequestIDKeptOrMade(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	if got := call(t, "GET", base+"/livez", nil, map[string]string{"X-Request-ID": "abc-123"}).header.Get("X-Request-ID"); got != "abc-123" {
		t.Fatalf("well-formed id not kept: %q", got)
	}
	got := call(t, "GET", base+"/livez", nil, map[string]string{"X-Request-ID": "bad id\twith junk"}).header.Get("X-Request-ID")
	if got == "" || strings.ContainsAny(got, " \t") {
		t.Fatalf("malformed id not replaced: %q", got)
	}
}

func TestCacheableFeed(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	first := call(t, "GET", base+"/feed", nil, nil)
	etag := first.header.Get("ETag")
	if first.status != 200 || etag == "" || first.header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("first: %d etag %q cc %q", first.status, etag, first.header.Get("Cache-Control"))
	}
	again := call(t, "GET", base+"/feed", nil, map[string]string{"If-None-Match": etag})
	if again.status != 304 || len(again.raw) != 0 {
		t.Fatalf("revalidation: %d %q", again.status, again.raw)
	}
	other := call(t, "GET", base+"/feed", nil, map[string]string{"If-None-Match": `W/"other"`})
	if other.status != 200 {
		t.Fatalf("other etag: %d", other.status)
	}
}

func TestReadiness(t *testing.T) {
	srv := newServer(t)
	healthy := true
	srv.AddCheck("db", func(ctx context.Context) error {
		if healthy {
			return nil
		}
		return errors.New("down")
	})
	base, _, _ := start(t, srv)
	if r := call(t, "GET", base+"/readyz", nil, nil); r.status != 200 {
		t.Fatalf("ready: %d", r.status)
	}
	// Ready (the admin port's /readyz) says the same.
	if err := srv.Ready(context.Background()); err != nil {
		t.Fatalf("Ready while ready: %v", err)
	}
	healthy = false
	if r := call(t, "GET", base+"/readyz", nil, nil); r.status != 503 || r.env.Error.Code != web.CodeServiceUnavailable {
		t.Fatalf("not ready: %d %s", r.status, r.raw)
	}
	if err := srv.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "db:down") {
		t.Fatalf("Ready with db down: %v", err)
	}
	if r := call(t, "GET", base+"/livez", nil, nil); r.status != 200 {
		t.Fatalf("live: %d", r.status)
	}
}

// A request in flight when shutdown starts is finished, not cut.
func TestGracefulShutdownDrainsInFlight(t *testing.T) {
	srv := web.New(testConfig(), logx.NewTo(io.Discard, "test", "error"), "test")
	entered := make(chan struct{})
	srv.App.Get("/work", func(c *fiber.Ctx) error {
		close(entered)
		time.Sleep(250 * time.Millisecond)
		return web.OK(c, 200, fiber.Map{"done": true})
	})
	base, cancel, done := start(t, srv)
	got := make(chan result, 1)
	go func() { got <- call(t, "GET", base+"/work", nil, nil) }()
	<-entered
	cancel()
	r := <-got
	if r.status != 200 || !bytes.Contains(r.raw, []byte(`"done":true`)) {
		t.Fatalf("in-flight request cut: %d %s", r.status, r.raw)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	done <- nil // for the cleanup's receive
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Fatal("server still accepts connections after shutdown")
	}
}

// A JSON body must say so: a browser sends text/plain across origins without
// a preflight, and another charset would be read wrong.
func TestJSONBodyNeedsJSONMediaType(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/json; charset=utf-16",
		"application/x-www-form-urlencoded", "application/json;;"} {
		h := map[string]string{}
		if ct != "" {
			h["Content-Type"] = ct
		}
		r := call(t, "POST", base+"/echo", strings.NewReader(`{"name":"a","n":1}`), h)
		if r.status != 415 || r.env.Error == nil || r.env.Error.Code != web.CodeUnsupportedMedia {
			t.Errorf("Content-Type %q: %d %s", ct, r.status, r.raw)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=UTF-8", "application/merge-patch+json"} {
		r := call(t, "POST", base+"/echo", strings.NewReader(`{"name":"a","n":1}`), map[string]string{"Content-Type": ct})
		if r.status != 201 {
			t.Errorf("Content-Type %q: %d %s", ct, r.status, r.raw)
		}
	}
}
