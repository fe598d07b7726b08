package web

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/net/netutil"
)

// connCap serves at most max connections at once. The others wait in the
// kernel's accept queue, which costs the process no memory, instead of being
// accepted (a goroutine, buffers and a request context each) or refused with
// the plain-text 503 fasthttp writes past its own Concurrency. While the cap
// is reached, every answer closes its connection, so that waiting clients get
// their turn rather than queueing behind keep-alive ones.
type connCap struct {
	net.Listener
	max    int64
	active atomic.Int64
}

func newConnCap(ln net.Listener, max int) *connCap {
	return &connCap{Listener: netutil.LimitListener(ln, max), max: int64(max)}
}

func (l *connCap) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.active.Add(1)
	return &cappedConn{Conn: c, l: l}, nil
}

// full reports whether every slot is taken.
func (l *connCap) full() bool { return l.active.Load() >= l.max }

type cappedConn struct {
	net.Conn
	l    *connCap
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.active.Add(-1) })
	return err
}

// rotateWhenFull closes the connection after the answer while the cap is
// reached. It runs after the handlers, whose forwarded answers replace the
// response headers.
func (s *Server) rotateWhenFull(c *fiber.Ctx) error {
	err := c.Next()
	if l := s.conns.Load(); l != nil && l.full() {
		c.Context().SetConnectionClose()
	}
	return err
}
