package optin

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const baseURL = "https://coworkjobs.example"

var (
	dbURL   string
	pool    *pgxpool.Pool
	store   *newsletterdb.Store
	bus     *newsletterbus.Business
	signer  *newsletterbus.Signer
	acts    *Activities
	mailDir string
)

// TestMain gives the package a throwaway database and a real SMTP catcher on
// a loopback port; the activities talk to both.
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main("community_optin", func() int {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		var err error
		if pool, err = pg.Open(ctx, dbURL, "community", pg.Options{}); err != nil {
			panic(err)
		}
		defer pool.Close()
		if err := pg.Migrate(ctx, pool, "community", migrations.FS, log); err != nil {
			panic(err)
		}
		mailDir, err = os.MkdirTemp("", "community-mail-*")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(mailDir)
		catcher, err := mailcatcher.New(mailDir, log)
		if err != nil {
			panic(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		go func() { _ = catcher.Serve(ctx, ln) }()
		sender, err := mailer.New("smtp://"+ln.Addr().String(), "coworkjobs <newsletter@coworkjobs.example>")
		if err != nil {
			panic(err)
		}
		signer, _ = newsletterbus.NewSigner("test-newsletter-secret-0123456789abcdef")
		store = newsletterdb.New(pool)
		bus = newsletterbus.New(store, signer, newsletterbus.Config{ConsentVersion: "t1", ResendInterval: 10 * time.Minute})
		acts = &Activities{Newsletter: bus, Mail: sender, PublicBaseURL: baseURL}
		return m.Run()
	}, func(u string) { dbURL = u }))
}

// pending creates a pending subscriber through the business rules.
func pending(t *testing.T, email string) newsletterbus.Subscriber {
	t.Helper()
	if _, err := bus.Subscribe(context.Background(), newsletterbus.NewSubscription{Email: email, Consent: true, ClientIP: "198.51.100.1"}); err != nil {
		t.Fatal(err)
	}
	s, err := store.GetByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mailsTo(t *testing.T, email string) []*mailcatcher.Mail {
	t.Helper()
	m, err := mailcatcher.For(mailDir, email)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}
