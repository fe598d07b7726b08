package conncap_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web/conncap"
)

func listen(t *testing.T, max int) (*conncap.Listener, func() net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := conncap.New(ln, max)
	t.Cleanup(func() { _ = l.Close() })
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	return l, dial
}

// A connection past the cap stays in the kernel's queue until a served one
// closes.
func TestAcceptWaitsForASlot(t *testing.T) {
	l, dial := listen(t, 1)
	dial()
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if !l.Full() {
		t.Fatal("one connection served under a cap of one: not full")
	}
	dial()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	select {
	case <-accepted:
		t.Fatal("accepted past the cap")
	case <-time.After(100 * time.Millisecond):
	}
	if !l.Waiting() {
		t.Fatal("a connection waits in the queue, Waiting says no")
	}
	_ = first.Close()
	select {
	case c := <-accepted:
		_ = c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not accepted once a slot freed")
	}
}

// Close ends an Accept that waits for a slot.
func TestCloseStopsAWaitingAccept(t *testing.T) {
	l, dial := listen(t, 1)
	dial()
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	_ = l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waits after Close")
	}
}
