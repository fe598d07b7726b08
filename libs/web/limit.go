package web

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// connCap serves at most max connections at once. The others wait in the
// kernel's accept queue, which costs the process no memory, instead of being
// accepted (a goroutine, buffers and a request context each) or refused with
// the plain-text 503 fasthttp writes past its own Concurrency. While the cap
// is reached, every answer closes its connection, so that waiting clients get
// their turn rather than queueing behind keep-alive ones.
type connCap struct {
	net.Listener
	slots     chan struct{} // one per connection being served
	done      chan struct{} // closed by Close: stops waiting for a slot
	closeOnce sync.Once
	raw       syscall.RawConn // the listening socket, for its queue length; nil when unknown
}

func newConnCap(ln net.Listener, max int) *connCap {
	l := &connCap{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{})}
	if sc, ok := ln.(syscall.Conn); ok {
		l.raw, _ = sc.SyscallConn()
	}
	return l
}

// Accept takes a slot before it accepts, so past the cap connections stay in
// the kernel's queue.
func (l *connCap) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &cappedConn{Conn: c, l: l}, nil
}

// Close stops the listener and any Accept waiting for a slot.
func (l *connCap) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// full reports whether every slot is taken.
func (l *connCap) full() bool { return len(l.slots) >= cap(l.slots) }

type cappedConn struct {
	net.Conn
	l      *connCap
	once   sync.Once
	linger atomic.Bool
}

// Lingering close (RFC 9112 §9.6): how long and how much of what a client
// still sends is read and dropped after an error answer, before closing.
const (
	lingerTimeout = 2 * time.Second
	lingerBytes   = 4 << 20
)

// lingerConn marks conn, when it is one of ours, to be closed lingering: the
// request it carried was answered without being read whole (a 413 before the
// body, a malformed request), and closing a socket that still has unread data
// makes the kernel reset it, which can destroy the answer before the client
// has read it: a client still sending its body saw "connection reset by peer"
// instead of the 413 envelope.
func lingerConn(conn net.Conn) {
	if c, ok := conn.(*cappedConn); ok {
		c.linger.Store(true)
	}
}

// Close frees the connection's slot. A connection marked by lingerConn is
// half-closed and drained in the background first, bounded in time and bytes,
// keeping its slot until then.
func (c *cappedConn) Close() error {
	var err error
	c.once.Do(func() {
		tcp, ok := c.Conn.(interface{ CloseWrite() error })
		if !c.linger.Load() || !ok || tcp.CloseWrite() != nil {
			err = c.Conn.Close()
			<-c.l.slots
			return
		}
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(lingerTimeout))
			_, _ = io.CopyN(io.Discard, c.Conn, lingerBytes)
			_ = c.Conn.Close()
			<-c.l.slots
		}()
	})
	return err
}

// rotateWhenFull closes the connection after the answer while draining, and
// while the cap is reached and connections wait for a slot. Only then: a
// client holding more keep-alive connections than the cap with nobody waiting
// (an ingress's upstream pool) would otherwise reconnect for every request. It runs after
// the handlers, whose forwarded answers replace the response headers.
func (s *Server) rotateWhenFull(c *fiber.Ctx) error {
	err := c.Next()
	// While draining, every answer closes its connection as well: the
	// client's next request opens a new one, which lands on another replica.
	if s.draining.Load() {
		c.Context().SetConnectionClose()
	} else if l := s.conns.Load(); l != nil && l.full() && l.waiting() {
		c.Context().SetConnectionClose()
	}
	return err
}

// waiting reports whether connections wait in the kernel's accept queue; where
// the length of the queue is unknown it says yes, so that a full server still
// rotates.
func (l *connCap) waiting() bool {
	if l.raw == nil {
		return true
	}
	n := -1
	if err := l.raw.Control(func(fd uintptr) { n = acceptQueueLen(fd) }); err != nil {
		return true
	}
	return n != 0
}
