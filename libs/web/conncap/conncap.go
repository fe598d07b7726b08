// Package conncap caps the connections a server serves at once. Past the cap,
// connections wait in the kernel's accept queue, which costs the process no
// memory, instead of being accepted (a goroutine, buffers and a request
// each) or refused with the plain-text 503 fasthttp writes past its own
// Concurrency: see the overload rows of `make bench` (peak RSS and 5xx).
//
// golang.org/x/net/netutil.LimitListener caps the same way, but it hides the
// TCP connection (the lingering close after a 413 needs it) and how many are
// served (a server at the cap closes its keep-alive connections only while
// others wait).
package conncap

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Listener serves at most max connections at once.
type Listener struct {
	net.Listener
	slots     chan struct{} // one per connection being served
	done      chan struct{} // closed by Close: stops waiting for a slot
	closeOnce sync.Once
	raw       syscall.RawConn // the listening socket, for its queue length; nil when unknown
}

// New caps ln at max connections served at once.
func New(ln net.Listener, max int) *Listener {
	l := &Listener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{})}
	if sc, ok := ln.(syscall.Conn); ok {
		l.raw, _ = sc.SyscallConn()
	}
	return l
}

// Accept takes a slot before it accepts, so past the cap connections stay in
// the kernel's queue.
func (l *Listener) Accept() (net.Conn, error) {
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
	return &conn{Conn: c, l: l}, nil
}

// Close stops the listener and any Accept waiting for a slot.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// Full reports whether every slot is taken.
func (l *Listener) Full() bool { return len(l.slots) >= cap(l.slots) }

// Waiting reports whether connections wait in the kernel's accept queue;
// where the length of the queue is unknown it says yes, so that a full
// server still makes room.
func (l *Listener) Waiting() bool {
	if l.raw == nil {
		return true
	}
	n := -1
	if err := l.raw.Control(func(fd uintptr) { n = acceptQueueLen(fd) }); err != nil {
		return true
	}
	return n != 0
}

type conn struct {
	net.Conn
	l      *Listener
	once   sync.Once
	linger atomic.Bool
}

// Lingering close (RFC 9112 §9.6): how long and how much of what a client
// still sends is read and dropped after an error answer, before closing.
const (
	lingerTimeout = 2 * time.Second
	lingerBytes   = 4 << 20
)

// Linger marks c, when a Listener accepted it, to be closed lingering: the
// request it carried was answered without being read whole (a 413 before the
// body, a malformed request), and closing a socket that still has unread data
// makes the kernel reset it, which can destroy the answer before the client
// has read it: a client still sending its body saw "connection reset by peer"
// instead of the 413 envelope.
func Linger(c net.Conn) {
	if c, ok := c.(*conn); ok {
		c.linger.Store(true)
	}
}

// Close frees the connection's slot. A connection marked by Linger is
// half-closed and drained in the background first, bounded in time and bytes,
// keeping its slot until then.
func (c *conn) Close() error {
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
