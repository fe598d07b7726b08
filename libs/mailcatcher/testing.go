package mailcatcher

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
)

// StartTest runs a catcher on a free loopback port until tb ends and
// returns its address (for SMTP_URL=smtp://addr) and its folder (for For).
func StartTest(tb testing.TB) (addr, dir string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	dir = tb.TempDir()
	c, err := New(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, ln) }()
	tb.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), dir
}
