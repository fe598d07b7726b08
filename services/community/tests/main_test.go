// Package tests drives the community service's public routes through real
// HTTP requests (Fiber's app.Test) against a throwaway PostgreSQL database.
package tests

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/web"
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
	dbURL  string
	pool   *pgxpool.Pool
	srv    *web.Server
	codec  *identity.Codec
	signer *newsletterbus.Signer
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main("community_http", func() int {
		ctx := context.Background()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		var err error
		pool, err = pg.Open(ctx, dbURL, "community", pg.Options{})
		if err != nil {
			panic(err)
		}
		defer pool.Close()
		if err := pg.Migrate(ctx, pool, "community", migrations.FS, log); err != nil {
			panic(err)
		}
		codec, _ = identity.NewCodec(identitySecret)
		signer, _ = newsletterbus.NewSigner(tokenSecret)
		cfg := web.Config{HTTPAddr: "127.0.0.1:0", BodyLimitBytes: 1 << 20, ReadTimeout: 5 * time.Second,
			WriteTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second,
			ShutdownTimeout: time.Second, Concurrency: 64}
		srv = web.New(cfg, log, "community")
		communityapp.Routes(srv.App, communityapp.Config{Pool: pool, Codec: codec, PublicBaseURL: baseURL,
			Signer: signer, ConsentVersion: "test-v1", ResendInterval: 10 * time.Minute})
		srv.Fallback()
		if err := seedEvents(ctx); err != nil {
			panic(err)
		}
		return m.Run()
	}, func(u string) { dbURL = u }))
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

type response struct {
	Status int
	Header http.Header
	Body   []byte
	Env    struct {
		Success bool            `json:"success"`
		Status  int             `json:"status"`
		Data    json.RawMessage `json:"data"`
		Error   *struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
}

// details returns the 422 problem list.
func (r response) details(t *testing.T) []string {
	t.Helper()
	if r.Env.Error == nil {
		t.Fatalf("no error in %s", r.Body)
	}
	var d []string
	if err := json.Unmarshal(r.Env.Error.Details, &d); err != nil {
		t.Fatalf("details of %s: %v", r.Body, err)
	}
	return d
}

func (r response) data(t *testing.T, dst any) {
	t.Helper()
	if err := json.Unmarshal(r.Env.Data, dst); err != nil {
		t.Fatalf("data of %s: %v", r.Body, err)
	}
}

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
	res, err := srv.App.Test(hr, 10000)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := response{Status: res.StatusCode, Header: res.Header}
	out.Body, _ = io.ReadAll(res.Body)
	// Every answer of a documented route must be what api/openapi.yaml promises.
	if err := checker.CheckServed(hr, res.StatusCode, res.Header, out.Body); err != nil {
		t.Errorf("contract: %v", err)
	}
	if len(out.Body) > 0 {
		if err := json.Unmarshal(out.Body, &out.Env); err != nil {
			t.Fatalf("%s %s: body is not an envelope: %s", r.method, r.path, out.Body)
		}
	}
	return out
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
