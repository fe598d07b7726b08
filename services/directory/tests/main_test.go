// Package tests drives the directory service through real HTTP requests
// (Fiber's app.Test) against a throwaway database on the real PostgreSQL.
package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/app/dirapp"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus/stores/dirdb"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

// checker validates every answer of a documented route against api/openapi.yaml.
var checker = contract.MustNew()

const secret = "test-secret-test-secret-test-secret-0123"

var (
	app   *fiber.App
	codec *identity.Codec
	pool  *pgxpool.Pool
)

func TestMain(m *testing.M) {
	var url string
	os.Exit(pgtest.Main("directory_http", func() int {
		if err := setup(url); err != nil {
			fmt.Fprintln(os.Stderr, "setup:", err)
			return 1
		}
		defer pool.Close()
		return m.Run()
	}, func(u string) { url = u }))
}

func setup(url string) error {
	ctx := context.Background()
	log := logx.NewTo(io.Discard, "directory", "error")
	var err error
	pool, err = pg.Open(ctx, url, "directory", pg.Options{MaxConns: 8})
	if err != nil {
		return err
	}
	if err := pg.Migrate(ctx, pool, "directory", migrations.FS, log); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, fixtures); err != nil {
		return fmt.Errorf("fixtures: %w", err)
	}
	codec, err = identity.NewCodec(secret)
	if err != nil {
		return err
	}
	srv := web.New(web.Config{
		HTTPAddr: "127.0.0.1:0", BodyLimitBytes: 1 << 20, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second, ShutdownTimeout: time.Second, Concurrency: 256,
	}, log, "directory")
	dirapp.Routes(srv.App, dirapp.Config{Bus: dirbus.New(dirdb.New(pool)), Codec: codec})
	srv.Fallback()
	app = srv.App
	return nil
}

// fixtures: a small directory whose every row exists to prove one rule.
const fixtures = `
INSERT INTO cities (id, name, slug, country_code, latitude, longitude, confirmed) VALUES
 (1, 'Berlin', 'berlin', 'DE', 52.520008, 13.404954, true),
 (2, 'Zürich', 'zurich', 'CH', 47.376887, 8.541694, true),
 (3, 'Zug', 'zug', 'CH', 47.166168, 8.515495, true),
 (4, 'Porto', 'porto', 'PT', 41.157944, -8.629105, true),
 (5, 'Porto Alegre', 'porto-alegre', 'BR', -30.034647, -51.217658, true),
 (6, 'Portimão', 'portimao', 'PT', 37.138810, -8.536900, true),
 (7, 'Paris', 'paris', 'FR', 48.856613, 2.352222, false),
 (8, 'Kraków', 'krakow', 'PL', 50.064650, 19.944980, true),
 (9, 'Córdoba', 'cordoba', 'ES', 37.888175, -4.779383, true),
 (10, 'Cordoba', 'cordoba-argentina', 'AR', -31.420083, -64.188776, true),
 (11, 'Parisville', 'parisville', 'US', 33.000000, -97.000000, false),
 (12, 'München', 'munchen', 'DE', 48.137154, 11.576124, true),
 (13, 'Barcelona', 'barcelona', 'ES', 41.385064, 2.173404, true);
INSERT INTO cities (id, name, slug, country_code, latitude, longitude, confirmed)
SELECT 100 + i, 'Neustadt ' || chr(64 + i), 'neustadt-' || chr(96 + i), 'DE', 50, 10, true
FROM generate_series(1, 12) AS i;
SELECT setval(pg_get_serial_sequence('cities', 'id'), 200);

INSERT INTO spaces (id, name, slug, address, latitude, longitude, city_id, confirmed, is_pro, website, linkedin_url) VALUES
 (1, 'Spree Loft', 'spree-loft', 'Holzmarktstraße 25, Berlin', 52.511870, 13.424860, 1, true, true,
     'https://spree-loft.example.com', 'https://www.linkedin.com/company/spree-loft'),
 (2, 'Kreuzberg Hub', 'kreuzberg-hub', 'Oranienstraße 1, Berlin', 52.501000, 13.420000, 1, true, false, NULL, NULL),
 (3, 'Secret Berlin', 'secret-berlin', 'Torstraße 9, Berlin', 52.529000, 13.401000, 1, false, true, 'https://secret.example.com', NULL),
 (4, 'Limmat Works', 'limmat-works', 'Langstrasse 10, Zürich', 47.378000, 8.528000, 2, true, false, 'https://limmat.example.com', NULL),
 (5, 'Ribeira Studio', 'ribeira-studio', 'Rua da Ribeira 3, Porto', 41.140000, -8.613000, 4, true, true, NULL,
     'https://www.linkedin.com/company/ribeira-studio'),
 (6, 'Montmartre Lab', 'montmartre-lab', '12 Rue Lepic, Paris', 48.884000, 2.333000, 7, true, false, NULL, NULL);
SELECT setval(pg_get_serial_sequence('spaces', 'id'), 100);
INSERT INTO space_admins (space_id, email, role) VALUES (1, 'owner@spree-loft.example.com', 'owner');
INSERT INTO space_photos (space_id, position, url, caption) VALUES (1, 0, 'https://img.example.com/1.jpg', 'desk');
`

type envelope struct {
	Success bool            `json:"success"`
	Status  int             `json:"status"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Details []string `json:"details"`
	} `json:"error"`
}

var (
	liveKey   = &identity.Identity{Kind: identity.KindLive, KeyID: 1, Scopes: []string{"read"}}
	spaceKey1 = &identity.Identity{Kind: identity.KindRestricted, KeyID: 2, SpaceID: 1, Scopes: []string{"read"}}
	spaceKey3 = &identity.Identity{Kind: identity.KindLive, KeyID: 3, SpaceID: 3, Scopes: []string{"read"}}
	service   = &identity.Identity{Kind: identity.KindService, Service: "jobs"}
)

// get sends GET path with the identity signed (nil: no identity header).
func get(t *testing.T, path string, id *identity.Identity) (int, envelope) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if id != nil {
		h, err := codec.Sign(*id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(identity.Header, h)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, envelope) {
	t.Helper()
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// Every answer of a documented route must be what api/openapi.yaml promises.
	if err := checker.CheckServed(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("contract: %v", err)
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s %s: body is not an envelope: %v: %s", req.Method, req.URL, err, body)
	}
	if env.Status != resp.StatusCode {
		t.Fatalf("envelope status %d != HTTP status %d", env.Status, resp.StatusCode)
	}
	return resp.StatusCode, env
}

// data decodes the envelope's data into a slice of generic objects, so that
// tests see the JSON types exactly as a client does.
func objects(t *testing.T, env envelope) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(env.Data, &out); err != nil {
		t.Fatalf("data is not an array of objects: %v: %s", err, env.Data)
	}
	if out == nil {
		t.Fatalf("data is null, want an array: %s", env.Data)
	}
	return out
}
