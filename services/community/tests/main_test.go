// Package tests drives the community service's public routes through real
// HTTP requests (Fiber's app.Test) against a throwaway PostgreSQL database.
package tests

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/community/internal/app/communityapp"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
	"github.com/coworkjobs/coworkjobs/services/community/migrations"
)

// checker validates every answer of a documented route against api/openapi.yaml.
var checker = contract.MustNew()

const (
	identitySecret = "test-identity-secret-0123456789abcdef"
	tokenSecret    = "test-newsletter-secret-0123456789abcdef"
	baseURL        = "https://coworkjobs.example"
)

var (
	pool   *pgxpool.Pool
	svc    *webtest.Service
	signer *newsletterbus.Signer
	sealer *privacy.Sealer
)

func TestMain(m *testing.M) {
	schema := pgtest.Schema{Name: "community", Migrations: migrations.FS}
	os.Exit(pgtest.MainMigrated(m, "community_http", schema, func(db pgtest.Migrated) error {
		pool = db.Pool
		signer, _ = newsletterbus.NewSigner(tokenSecret)
		var err error
		if sealer, err = privacy.NewSealer([]byte(identitySecret)); err != nil {
			return err
		}
		svc, err = webtest.NewService("community", identitySecret, checker, func(srv *web.Server, codec *identity.Codec) error {
			communityapp.Routes(srv.App, communityapp.Config{Pool: pool, Codec: codec, PublicBaseURL: baseURL,
				Signer: signer, ConsentVersion: "test-v1", ResendInterval: 10 * time.Minute, Privacy: sealer})
			return nil
		})
		if err != nil {
			return err
		}
		return seedEvents(context.Background())
	}))
}

var public = identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.7"}

// response is one answer of the app.
type response = webtest.Reply

type req struct {
	method, path, body, contentType string
	id                              *identity.Identity // Kind "" is public
	header                          map[string]string
}

func do(t *testing.T, r req) response {
	t.Helper()
	id := r.id
	if id != nil && id.Kind == "" {
		public := *id
		public.Kind = identity.KindPublic
		id = &public
	}
	return svc.Do(t, webtest.Request{Method: r.method, Target: r.path, Body: r.body, ContentType: r.contentType,
		Identity: id, Header: r.header})
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
