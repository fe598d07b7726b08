// Package dashboard drives the space dashboard through the gateway of the
// whole system, with the sign-in mails caught on loopback: sign-in by a
// mailed link (single use, expiry, no enumeration), CSRF refused, roles and
// Pro, the space's jobs acted on, and its keys created, used and revoked,
// once over HTTP and once in a real browser (browser_test.go).
package dashboard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var (
	sys     *suite.Suite
	db      *pgxpool.Pool
	mailDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mailDir, err = os.MkdirTemp("", "dashboard-mail"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(mailDir)
	catcher, err := mailcatcher.New(mailDir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = catcher.Serve(ctx, ln) }()
	return suite.Main(m, suite.Options{Name: "e2e_dashboard", Keys: true, PublicGateway: true,
		// The per-IP budget of public POSTs is the gateway's own (tested there);
		// here every request comes from 127.0.0.1.
		// X-Forwarded-For from loopback names the client, so that a test can
		// be several clients (the sign-in budget is per address and client).
		Env: []string{"SMTP_URL=smtp://" + ln.Addr().String(), "KEY_CACHE_TTL=1s", "PUBLIC_POST_RATE_LIMIT_PER_MINUTE=10000",
			"PROXY_HEADER=X-Forwarded-For", "TRUSTED_PROXIES=127.0.0.1"}},
		func(s *suite.Suite) error {
			sys = s
			db, err = pgxpool.New(ctx, s.DatabaseURL())
			return err
		})
}
