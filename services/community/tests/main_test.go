// Package tests drives the community service's public routes through real
// HTTP requests (Fiber's app.Test) against a throwaway PostgreSQL database.
package tests

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
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
	srv    *web.Server
	codec  *identity.Codec
	signer *newsletterbus.Signer
)

func TestMain(m *testing.M) {
	schema := pgtest.Schema{Name: "community", Migrations: migrations.FS}
	os.Exit(pgtest.MainMigrated(m, "community_http", schema, func(db pgtest.Migrated) error {
		pool = db.Pool
		codec, _ = identity.NewCodec(identitySecret)
		signer, _ = newsletterbus.NewSigner(tokenSecret)
		srv = web.New(webtest.Config(), slog.New(slog.DiscardHandler), "community")
		communityapp.Routes(srv.App, communityapp.Config{Pool: pool, Codec: codec, PublicBaseURL: baseURL,
			Signer: signer, ConsentVersion: "test-v1", ResendInterval: 10 * time.Minute})
		srv.Fallback()
		return seedEvents(context.Background())
	}))
}

// caller builds a signed identity header value.
func caller(t *testing.T, id identity.Identity) string {
	t.Helper()
	if id.Kind == "" {
		id.Kind = identity.KindPublic
	}
	v, err := codec.Sign(id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var public = identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.7"}

// response is one answer of the app.
type response = webtest.Reply

type req struct {
	method, path, body, contentType string
	id                              *identity.Identity
	header                          map[string]string
}

func do(t *testing.T, r req) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.contentType != "" {
		hr.Header.Set("Content-Type", r.contentType)
	}
	if r.id != nil {
		hr.Header.Set(identity.Header, caller(t, *r.id))
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	return webtest.Do(t, srv.App, checker, hr)
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
