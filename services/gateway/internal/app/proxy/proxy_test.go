package proxy

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// serve runs app on a loopback port until the test ends.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return ln.Addr().String()
}

// front serves a gateway front that forwards every /v2/ request to b with a
// public identity, its errors in the envelope, until the test ends.
func front(t *testing.T, b *Backend) string {
	t.Helper()
	codec, err := identity.NewCodec("proxy-test-secret-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: web.ErrorHandler(slog.Default())})
	app.All("/v2/*", func(c *fiber.Ctx) error {
		return b.Forward(c, codec, identity.Identity{Kind: identity.KindPublic}, false, nil)
	})
	return serve(t, app)
}

// A client that hangs up in the middle of a streamed answer must not leave
// the backend connection in the pool with the rest of that answer unread:
// the next request sent on it would read the leftovers as its response. The
// gateway closes it instead, so the backend's write fails at once; a pooled
// connection would leave the backend blocked on a full socket (its write
// timeout is minutes here), and nothing else touches this pool to rescue it:
// no health poll, no idle sweep.
func TestAbandonedStreamClosesItsBackendConnection(t *testing.T) {
	ended := make(chan error, 4)
	backend := fiber.New(fiber.Config{WriteTimeout: 5 * time.Minute})
	chunk := []byte(strings.Repeat("x", 8<<10))
	backend.Get("/v2/jobs", func(c *fiber.Ctx) error {
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			for range 4096 { // chunked, far more than the sockets' buffers hold
				if _, err := w.Write(chunk); err != nil {
					ended <- err
					return
				}
				if err := w.Flush(); err != nil {
					ended <- err
					return
				}
			}
			ended <- nil
		})
		return nil
	})
	backend.Get("/v2/small", func(c *fiber.Ctx) error { return c.SendString(`{"success":true,"status":200,"data":{}}`) })
	b, err := NewBackend("jobs", "http://"+serve(t, backend), BackendOptions{Timeout: time.Minute, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	b.pool.(redialing).c.MaxIdleConnDuration = time.Hour // no idle sweep closes a pooled connection during the test
	addr := front(t, b)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v2/jobs HTTP/1.1\r\nHost: gateway.test\r\n\r\n")
	if _, err := io.ReadFull(conn, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the backend wrote the whole answer to a client that hung up after its first kibibyte")
		}
	case <-time.After(time.Minute):
		t.Fatal("the backend is still blocked writing the abandoned answer: its connection went back to the pool")
	}
	// The pool still serves.
	for range 5 {
		req, resp := "GET /v2/small HTTP/1.1\r\nHost: gateway.test\r\nConnection: close\r\n\r\n", make([]byte, 12)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, req)
		if _, err := io.ReadFull(c, resp); err != nil || string(resp) != "HTTP/1.1 200" {
			t.Fatalf("after the abandoned stream: %q %v", resp, err)
		}
		c.Close()
	}
}

// A pooled backend connection is replaced once it is MaxConnAge old, and
// replaced gracefully (its last request says Connection: close): behind a
// Service that balances connections, a replica added later gets new ones. No
// request fails on the way; without an age limit one connection serves all.
func TestPooledConnectionsAgeOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		age      time.Duration
		minConns int64
		maxConns int64
	}{{"unbounded", 0, 1, 1}, {"aged", 100 * time.Millisecond, 3, 1 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			backend := fiber.New(fiber.Config{DisableStartupMessage: true})
			backend.Get("/v2/small", func(c *fiber.Ctx) error { return c.SendString(`{"success":true,"status":200,"data":{}}`) })
			backend.Server().ConnState = func(_ net.Conn, st fasthttp.ConnState) {
				if st == fasthttp.StateNew {
					conns.Add(1)
				}
			}
			b, err := NewBackend("jobs", "http://"+serve(t, backend), BackendOptions{Timeout: time.Minute, MaxConns: 1, MaxConnAge: tc.age})
			if err != nil {
				t.Fatal(err)
			}
			addr := front(t, b)
			// Requests spread over at least 5 ages of the aged pool.
			for i, start := 0, time.Now(); i < 10 || time.Since(start) < 500*time.Millisecond; i++ {
				resp, err := http.Get("http://" + addr + "/v2/small")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("request %d: %d", i, resp.StatusCode)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if n := conns.Load(); n < tc.minConns || n > tc.maxConns {
				t.Fatalf("%d backend connections, want %d..%d", n, tc.minConns, tc.maxConns)
			}
		})
	}
}

// A refused dial (a Service still sending new connections to a pod that
// stopped listening) is dialled again, a POST too, since nothing was sent;
// a refusal that lasts is answered as before.
func TestRefusedDialIsDialledAgain(t *testing.T) {
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	addr := serve(t, app)
	b, err := NewBackend("jobs", "http://"+addr, BackendOptions{Timeout: 2 * time.Second, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	var dials, refuse atomic.Int64
	b.pool.(redialing).c.Dial = func(a string) (net.Conn, error) {
		if dials.Add(1) <= refuse.Load() {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connection refused")}
		}
		return net.Dial("tcp", a)
	}
	send := func() error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI("http://" + addr + "/")
		req.SetBodyString("{}")
		if err := b.pool.DoTimeout(req, resp, 2*time.Second); err != nil {
			return err
		}
		if string(resp.Body()) != "ok" {
			return fmt.Errorf("answer %q", resp.Body())
		}
		return nil
	}
	refuse.Store(2)
	if err := send(); err != nil || dials.Load() != 3 {
		t.Fatalf("two refused dials: %v after %d dials, want the third to answer", err, dials.Load())
	}
	b.pool.(redialing).c.CloseIdleConnections()
	dials.Store(0)
	refuse.Store(100)
	if err := send(); err == nil || !dialFailed(err) || dials.Load() != 3 {
		t.Fatalf("a lasting refusal: %v after %d dials, want a dial error after 3", err, dials.Load())
	}
}
