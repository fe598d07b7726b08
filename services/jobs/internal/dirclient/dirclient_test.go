package dirclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// hangUp closes the first n connections it accepts without a word, as a pod
// that stopped listening does to a connection a Service still sent it.
type hangUp struct {
	net.Listener
	n atomic.Int64
}

func (l *hangUp) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.n.Add(-1) < 0 {
			return c, err
		}
		_ = c.Close()
	}
}

// A GET that got no answer is sent again (twice at most); one that never
// gets one is ErrDirectoryUnavailable, as before.
func TestGetIsSentAgainWhenNothingAnswered(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"success":true,"status":200,"data":{"result":"resolved","city":{"id":7,"name":"Lisbon","slug":"lisbon"}}}`))
	}))
	l := &hangUp{Listener: srv.Listener}
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	codec, err := identity.NewCodec("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	c := New(srv.URL, codec, Options{Timeout: 2 * time.Second})

	l.n.Store(2)
	city, found, err := c.City(context.Background(), 7)
	if err != nil || !found || city.Name != "Lisbon" || served.Load() != 1 {
		t.Fatalf("after two hang-ups: %+v %v %v, served %d", city, found, err, served.Load())
	}
	// A new client (no kept connection) against a directory that keeps
	// hanging up.
	l.n.Store(100)
	c = New(srv.URL, codec, Options{Timeout: 2 * time.Second})
	if _, _, err := c.City(context.Background(), 8); !errors.Is(err, jobbus.ErrDirectoryUnavailable) || served.Load() != 1 {
		t.Fatalf("a lasting hang-up: %v, served %d", err, served.Load())
	}
}
