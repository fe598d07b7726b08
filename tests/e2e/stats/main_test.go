// Package stats drives job statistics (issue 47) through the gateway of the
// running system against the real PostgreSQL: apply clicks counted through
// GET /go/{job_ref} (N clicks from M clients, crawlers apart), the redirect
// with the statistics' store away, no open redirect, the plan rule and the
// isolation between spaces' numbers.
//
// The jobs service writes its statistics through a TCP relay this package
// runs (STATS_DATABASE_URL), so that a test can take the store away and
// bring it back without touching the shared PostgreSQL.
package stats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var (
	sys   *suite.Suite
	db    *pgxpool.Pool
	relay *tcpRelay
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var code int
	var dbURL string
	return suite.MainDB(m, "e2e_stats", &dbURL, func() int {
		u, err := url.Parse(dbURL)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if relay, err = newRelay(u.Host); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer relay.Close()
		statsURL := *u
		statsURL.Host = relay.Addr()
		sys, err = suite.Start(ctx, suite.Options{Name: "e2e_stats", DatabaseURL: dbURL, Keys: true, Admin: true,
			Services: []string{"directory", "jobs", "gateway"},
			Seeds:    [][]string{{"directory-seed", "demo"}, {"jobs-seed", "demo"}},
			Env: []string{"STATS_DATABASE_URL=" + statsURL.String(), "DIRECTORY_CACHE_TTL=1s", "KEY_CACHE_TTL=1s",
				// Every request comes from 127.0.0.1; X-Forwarded-For from
				// loopback names the client, so that a test can be M clients.
				"PROXY_HEADER=X-Forwarded-For", "TRUSTED_PROXIES=127.0.0.1",
				"READ_RATE_LIMIT_PER_MINUTE=1000000", "PUBLIC_READ_RATE_LIMIT_PER_MINUTE=1000000"}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e_stats: start: %v\n", err)
			return 1
		}
		defer func() { sys.Stop() }()
		if db, err = pgxpool.New(ctx, dbURL); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer db.Close()
		code = m.Run()
		if code != 0 {
			sys.DumpLogs(os.Stderr)
		}
		return code
	})
}

// tcpRelay forwards connections to a PostgreSQL server while up; Down closes
// every connection and refuses new ones until Up.
type tcpRelay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]struct{}
}

func newRelay(target string) (*tcpRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &tcpRelay{ln: ln, target: target, up: true, conns: map[net.Conn]struct{}{}}
	go r.serve()
	return r, nil
}

func (r *tcpRelay) Addr() string { return r.ln.Addr().String() }

func (r *tcpRelay) Close() { _ = r.ln.Close(); r.Down() }

func (r *tcpRelay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.mu.Lock()
		if !r.up {
			r.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			r.mu.Unlock()
			_ = c.Close()
			continue
		}
		r.conns[c], r.conns[s] = struct{}{}, struct{}{}
		r.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
		go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
	}
}

// Down cuts every relayed connection and refuses new ones.
func (r *tcpRelay) Down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = false
	for c := range r.conns {
		_ = c.Close()
	}
	clear(r.conns)
}

// Up relays again.
func (r *tcpRelay) Up() {
	r.mu.Lock()
	r.up = true
	r.mu.Unlock()
}
