package optin

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus/stores/newsletterdb"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

const baseURL = "https://coworkjobs.example"

var (
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
	ctx, stopCatcher := context.WithCancel(context.Background())
	schema := pgtest.Schema{Name: "community", Migrations: migrations.FS}
	code := pgtest.MainMigrated(m, "community_optin", schema, func(db pgtest.Migrated) error {
		pool = db.Pool
		var err error
		if mailDir, err = os.MkdirTemp("", "community-mail-*"); err != nil {
			return err
		}
		catcher, err := mailcatcher.New(mailDir, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go func() { _ = catcher.Serve(ctx, ln) }()
		sender, err := mailer.New("smtp://"+ln.Addr().String(), "coworkjobs <newsletter@coworkjobs.example>")
		if err != nil {
			return err
		}
		signer, _ = newsletterbus.NewSigner("test-newsletter-secret-0123456789abcdef")
		store = newsletterdb.New(pool)
		bus = newsletterbus.New(store, signer, newsletterbus.Config{ConsentVersion: "t1", ResendInterval: 10 * time.Minute})
		sealer, _ := privacy.NewSealer([]byte("test-identity-secret-0123456789abcdef"))
		acts = &Activities{Newsletter: bus, Mail: sender, PublicBaseURL: baseURL, Privacy: sealer}
		return nil
	})
	stopCatcher()
	if mailDir != "" {
		_ = os.RemoveAll(mailDir)
	}
	os.Exit(code)
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
