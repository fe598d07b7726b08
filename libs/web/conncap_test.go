package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Past HTTP_CONCURRENCY a connection waits in the kernel's queue instead of
// being refused: it is served, in the envelope, once a slot frees; and the
// answer given while every slot is taken closes its connection, so that a
// waiting client is not stuck behind a keep-alive one.
func TestConnectionsPastTheCapWaitAndAreServed(t *testing.T) {
	cfg := testConfig()
	cfg.Concurrency = 1
	srv := web.New(cfg, logx.NewTo(io.Discard, "test", "error"), "test")
	release := make(chan struct{})
	var released, servedEarly atomic.Bool
	srv.App.Get("/hold", func(c *fiber.Ctx) error {
		<-release
		return web.OK(c, http.StatusOK, fiber.Map{"held": true})
	})
	srv.App.Get("/next", func(c *fiber.Ctx) error {
		if !released.Load() {
			servedEarly.Store(true)
		}
		return web.OK(c, http.StatusOK, fiber.Map{"next": true})
	})
	base, _, _ := start(t, srv)
	addr := strings.TrimPrefix(base, "http://")

	send := func(path string) (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
		return conn, bufio.NewReader(conn)
	}
	read := func(r *bufio.Reader) (*http.Response, map[string]any) {
		t.Helper()
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			t.Fatalf("answer is not an envelope: %v", err)
		}
		return resp, env
	}

	_, first := send("/hold")  // takes the only slot
	_, second := send("/next") // connected (the kernel accepts), not served
	released.Store(true)
	close(release)
	resp, _ := read(first)
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("the answer at the cap: status %d, Connection: close %v", resp.StatusCode, resp.Close)
	}
	resp, env := read(second)
	if resp.StatusCode != http.StatusOK || env["success"] != true {
		t.Fatalf("the waiting connection: status %d %v", resp.StatusCode, env)
	}
	if servedEarly.Load() {
		t.Fatal("a second connection was served while the cap of one was taken")
	}
}

// A body over the limit is answered 413 before the client has finished
// sending it. The server then reads and drops the rest before it closes:
// closing with unread data would make the kernel reset the connection, and a
// client still writing would see "connection reset by peer" instead of the
// envelope (Go's client reports the reset now and then for a body a little
// over the limit, and most of the time for one far over it, as here).
func TestTooLargeBodyAnswerIsNotLostToAReset(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	body := strings.Repeat(`x`, 1<<20) // far past testConfig's BodyLimitBytes
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		resp, err := client.Post(base+"/echo", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("attempt %d: no answer: %v", i+1, err)
		}
		var env struct {
			Success bool `json:"success"`
			Error   struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if resp.StatusCode != 413 || err != nil || env.Success || env.Error.Code != web.CodePayloadTooLarge {
			t.Fatalf("attempt %d: %d %+v (%v)", i+1, resp.StatusCode, env, err)
		}
	}
}

// At the cap with nobody waiting, connections stay open: a client holding as
// many keep-alive connections as the cap (an ingress's upstream pool) is not
// made to reconnect for every request. Once a connection waits, the next
// answer closes its connection and the waiting one is served.
func TestKeepAliveAtTheCapWhileNobodyWaits(t *testing.T) {
	cfg := testConfig()
	cfg.Concurrency = 1
	srv := web.New(cfg, logx.NewTo(io.Discard, "test", "error"), "test")
	srv.App.Get("/ping", func(c *fiber.Ctx) error { return web.OK(c, http.StatusOK, fiber.Map{"pong": true}) })
	base, _, _ := start(t, srv)
	addr := strings.TrimPrefix(base, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	get := func(conn net.Conn, r *bufio.Reader) *http.Response {
		t.Helper()
		fmt.Fprintf(conn, "GET /ping HTTP/1.1\r\nHost: test\r\n\r\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := get(conn, r); resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("answer %d with nobody waiting: status %d, Connection: close %v", i+1, resp.StatusCode, resp.Close)
		}
	}

	waiting, err := net.Dial("tcp", addr) // accepted by the kernel, queued for a slot
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if resp := get(conn, r); !resp.Close {
		t.Fatal("the answer while a connection waits did not close its connection")
	}
	if resp := get(waiting, bufio.NewReader(waiting)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the waiting connection: status %d", resp.StatusCode)
	}
}
