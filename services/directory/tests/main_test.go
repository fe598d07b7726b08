// Package tests drives the directory service through real HTTP requests
// (Fiber's app.Test) against a throwaway database on the real PostgreSQL.
package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/app/dirapp"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus"
	"github.com/coworkjobs/coworkjobs/services/directory/internal/business/dirbus/stores/dirdb"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

// checker validates every answer of a documented route against api/openapi.yaml.
var checker = contract.MustNew()

const secret = "test-secret-test-secret-test-secret-0123"

var (
	pool *pgxpool.Pool
	svc  *webtest.Service
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "directory_http", pgtest.Schema{Name: "directory", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 8}}, setup))
}

func setup(db pgtest.Migrated) error {
	pool = db.Pool
	if _, err := pool.Exec(context.Background(), fixtures); err != nil {
		return fmt.Errorf("fixtures: %w", err)
	}
	var err error
	svc, err = webtest.NewService("directory", secret, checker, func(srv *web.Server, codec *identity.Codec) error {
		dirapp.Routes(srv.App, dirapp.Config{Bus: dirbus.New(dirdb.New(pool)), Codec: codec})
		return nil
	})
	return err
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

var (
	liveKey   = &identity.Identity{Kind: identity.KindLive, KeyID: 1, Scopes: []string{"read"}}
	spaceKey1 = &identity.Identity{Kind: identity.KindRestricted, KeyID: 2, SpaceID: 1, Scopes: []string{"read"}}
	spaceKey3 = &identity.Identity{Kind: identity.KindLive, KeyID: 3, SpaceID: 3, Scopes: []string{"read"}}
	service   = &identity.Identity{Kind: identity.KindService, Service: "jobs"}
)

// get sends GET path with the identity signed (nil: no identity header).
func get(t *testing.T, path string, id *identity.Identity) (int, webtest.Envelope) {
	t.Helper()
	return envelope(t, svc.Do(t, webtest.Request{Method: http.MethodGet, Target: path, Identity: id}))
}

// do sends req through the app.
func do(t *testing.T, req *http.Request) (int, webtest.Envelope) {
	t.Helper()
	return envelope(t, webtest.Do(t, svc.Server.App, checker, req))
}

// envelope checks that an answer is an envelope that repeats the HTTP status.
func envelope(t *testing.T, r webtest.Reply) (int, webtest.Envelope) {
	t.Helper()
	if len(r.Body) == 0 {
		t.Fatalf("empty body, want an envelope")
	}
	if r.Env.Status != r.Status {
		t.Fatalf("envelope status %d != HTTP status %d", r.Env.Status, r.Status)
	}
	return r.Status, r.Env
}

// data decodes the envelope's data into a slice of generic objects, so that
// tests see the JSON types exactly as a client does.
func objects(t *testing.T, env webtest.Envelope) []map[string]any {
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
