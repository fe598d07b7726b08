package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/hookapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/privacyapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/privacybus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

const (
	secret  = "test-secret-test-secret-test-secret-0123"
	baseURL = "https://coworkjobs.example"
	defInv  = "jobs@coworkjobs.example"
)

var (
	pool      *pgxpool.Pool
	codec     *identity.Codec
	dirURL    string
	appFlat   *fiber.App // JOBS_PAGINATION_ENABLED=false
	appPaged  *fiber.App // JOBS_PAGINATION_ENABLED=true
	appReach  *fiber.App // sitemaps, aggregator feeds, embed
	testLog   = slog.New(slog.NewTextHandler(io.Discard, nil))
	bgContext = context.Background()
	checker   = contract.MustNew()
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_http", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 20}}, setup))
}

func setup(db pgtest.Migrated) error {
	pool = db.Pool
	var err error
	codec, err = identity.NewCodec(secret)
	if err != nil {
		return err
	}
	dirURL, err = startDirectoryFixture()
	if err != nil {
		return err
	}
	appFlat = newApp(false, dirURL)
	appReach = reachOn(newBus(baseURL, dirURL), reachapp.Config{SitemapPartSize: reachPartSize})
	appPaged = newApp(true, dirURL)
	return nil
}

// newBus is the business layer on the package's database, with the
// directory at directoryURL and public pages under base.
func newBus(base, directoryURL string) *jobbus.Business {
	return busOn(jobdb.New(pool).Stores(), base, directoryURL)
}

// busOn is newBus over other stores.
func busOn(store jobbus.Stores, base, directoryURL string) *jobbus.Business {
	dir := dirclient.New(directoryURL, codec, dirclient.Options{Timeout: 2 * time.Second})
	return jobbus.New(store, dir, jobbus.Config{PublicBaseURL: base, DefaultInvEmail: defInv})
}

func newApp(paginated bool, directoryURL string) *fiber.App {
	return appOn(newBus(baseURL, directoryURL), paginated)
}

// appOn is the API over bus.
func appOn(bus *jobbus.Business, paginated bool) *fiber.App {
	srv := web.New(webtest.Config(), testLog, "jobs")
	jobapp.Routes(srv.App, jobapp.Config{Log: testLog, Bus: bus, Codec: codec, PaginationEnabled: paginated})
	hookapp.Routes(srv.App, hookapp.Config{Bus: hookbus.New(hookdb.New(pool), hookbus.Config{}), Codec: codec})
	sealer, err := privacy.NewSealer([]byte(secret))
	if err != nil {
		panic(err)
	}
	privacyapp.Routes(srv.App, privacyapp.Config{Codec: codec, Bus: &privacybus.Business{Store: alertdb.New(pool), Sealer: sealer}})
	srv.Fallback()
	return srv.App
}

// reachPartSize makes the sitemap's parts small enough for the tests' jobs
// to fill several.
const reachPartSize = 40

// reachOn is the sitemaps, aggregators' feeds and embed over bus.
func reachOn(bus *jobbus.Business, cfg reachapp.Config) *fiber.App {
	srv := web.New(webtest.Config(), testLog, "jobs")
	cfg.Log, cfg.Bus, cfg.Codec = testLog, bus, codec
	cfg.Spaces = dirclient.New(dirURL, codec, dirclient.Options{Timeout: 2 * time.Second})
	reachapp.Routes(srv.App, cfg)
	srv.Fallback()
	return srv.App
}

// ---- the directory's documented internal contract, served with fixed data over real HTTP ----

// fxCity and fxSpace build the directory's wire shapes (api/dirapi).
func fxCity(id int64, name, slug string, confirmed bool, lat, lon float64, country string) dirapi.City {
	return dirapi.City{ID: id, Name: name, Slug: slug, Confirmed: confirmed, Latitude: lat, Longitude: lon, CountryCode: country}
}

func fxSpace(id int64, name, slug string, confirmed, pro bool, cityID int64) dirapi.Space {
	return dirapi.Space{ID: id, Name: name, Slug: slug, Confirmed: confirmed, IsPro: pro, CityID: cityID}
}

// Fixed cities; ids 1000-9999 are generated ("City 1234", slug city-1234,
// confirmed) so that tests can own a city each.
var fxCities = []dirapi.City{
	fxCity(1, "Berlin", "berlin", true, 52.520008, 13.404954, "DE"),
	fxCity(2, "Bern", "bern", true, 46.947974, 7.447447, "CH"),
	fxCity(3, "Paris", "paris", true, 48.856613, 2.352222, "FR"),
	fxCity(4, "Hidden Town", "hidden-town", false, 10, 10, "DE"),
	fxCity(5, "Bergen", "bergen", true, 60.391263, 5.322054, "NO"),
}

// fxCoords places a generated city on a grid: ids that differ by one lie
// 0.5° of latitude (55.6 km) apart, other columns of 90 ids 3.3° of
// longitude apart.
func fxCoords(id int64) (lat, lon float64) {
	return 10 + float64(id%90)*0.5, -170 + float64(id/90)*3.3
}

func cityByID(id int64) (dirapi.City, bool) {
	for _, c := range fxCities {
		if c.ID == id {
			return c, true
		}
	}
	if id >= 1000 && id < 10000 {
		lat, lon := fxCoords(id)
		return fxCity(id, "City "+strconv.FormatInt(id, 10), "city-"+strconv.FormatInt(id, 10), true, lat, lon, "PT"), true
	}
	return dirapi.City{}, false
}

// Spaces: 10 pro confirmed, 11 confirmed not pro, 12 unconfirmed; ids
// 1000-1999 are pro confirmed spaces and 2000-2999 confirmed non-pro ones.
func spaceByID(id int64) (dirapi.Space, bool) {
	switch {
	case id == 10:
		return fxSpace(10, "Factory Berlin", "factory-berlin", true, true, 1), true
	case id == 11:
		return fxSpace(11, "Betahaus", "betahaus", true, false, 1), true
	case id == 12:
		return fxSpace(12, "Unconfirmed Hub", "unconfirmed-hub", false, false, 3), true
	case id >= 1000 && id < 2000:
		return fxSpace(id, "Pro Space "+strconv.FormatInt(id, 10), "pro-"+strconv.FormatInt(id, 10), true, true, 1), true
	case id >= 2000 && id < 3000:
		return fxSpace(id, "Space "+strconv.FormatInt(id, 10), "space-"+strconv.FormatInt(id, 10), true, false, 1), true
	}
	return dirapi.Space{}, false
}

func startDirectoryFixture() (string, error) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: web.ErrorHandler(testLog)})
	internal := app.Group("/internal", codec.Middleware(), identity.RequireKind(identity.KindService))
	internal.Get("/cities/resolve", func(c *fiber.Ctx) error {
		idText, name := c.Query("id"), c.Query("name")
		if (idText == "") == (name == "") {
			return web.Validation("Validation failed", []string{"give exactly one of id and name"})
		}
		if idText != "" {
			id, err := strconv.ParseInt(idText, 10, 64)
			if err != nil {
				return web.Validation("Validation failed", []string{"id must be an integer"})
			}
			city, ok := cityByID(id)
			if !ok {
				return web.OK(c, 200, fiber.Map{"result": "not_found"})
			}
			return web.OK(c, 200, fiber.Map{"result": "resolved", "city": city})
		}
		lname := strings.ToLower(name)
		var prefix []dirapi.City
		for _, ct := range fxCities {
			if !ct.Confirmed {
				continue
			}
			if strings.ToLower(ct.Name) == lname {
				return web.OK(c, 200, fiber.Map{"result": "resolved", "city": ct})
			}
			if strings.HasPrefix(strings.ToLower(ct.Name), lname) {
				prefix = append(prefix, ct)
			}
		}
		switch len(prefix) {
		case 0:
			return web.OK(c, 200, fiber.Map{"result": "not_found"})
		case 1:
			return web.OK(c, 200, fiber.Map{"result": "resolved", "city": prefix[0]})
		}
		sort.Slice(prefix, func(i, j int) bool { return prefix[i].Name < prefix[j].Name })
		return web.OK(c, 200, fiber.Map{"result": "ambiguous", "candidates": prefix})
	})
	internal.Get("/spaces/by-slug/:slug", func(c *fiber.Ctx) error {
		slug := c.Params("slug")
		for _, id := range []int64{10, 11, 12} {
			if sp, _ := spaceByID(id); sp.Slug == slug {
				return web.OK(c, 200, sp)
			}
		}
		for _, prefix := range []string{"pro-", "space-"} {
			if n, err := strconv.ParseInt(strings.TrimPrefix(slug, prefix), 10, 64); strings.HasPrefix(slug, prefix) && err == nil {
				if sp, ok := spaceByID(n); ok && sp.Slug == slug {
					return web.OK(c, 200, sp)
				}
			}
		}
		return web.NotFound("Space not found")
	})
	internal.Get("/spaces/:id", func(c *fiber.Ctx) error {
		id, err := strconv.ParseInt(c.Params("id"), 10, 64)
		if err != nil {
			return web.NotFound("Space not found")
		}
		sp, ok := spaceByID(id)
		if !ok {
			return web.NotFound("Space not found")
		}
		return web.OK(c, 200, sp)
	})
	internal.Get("/catalog", func(c *fiber.Ctx) error {
		sp10, _ := spaceByID(10)
		sp11, _ := spaceByID(11)
		return web.OK(c, 200, fiber.Map{"cities": fxCities, "spaces": []dirapi.Space{sp10, sp11}})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = app.Listener(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// ---- request helpers ----

// resp is one answer of the app.
type resp struct{ webtest.Reply }

func (r resp) data(t *testing.T, dst any) {
	t.Helper()
	r.Env.Into(t, dst)
}

// hasDetail says whether the answer's list of problems names sub; the object
// details of other answers (a refused transition's) hold no list.
func (r resp) hasDetail(sub string) bool {
	if r.Env.Error == nil {
		return false
	}
	var list []string
	_ = json.Unmarshal(r.Env.Error.Details, &list)
	for _, d := range list {
		if strings.Contains(d, sub) {
			return true
		}
	}
	return false
}

// liveKey is a live key of a space with write scope.
func liveKey(keyID, spaceID int64) identity.Identity {
	return identity.Identity{Kind: identity.KindLive, KeyID: keyID, SpaceID: spaceID, Scopes: []string{"write"}}
}

func do(t testing.TB, app *fiber.App, method, path string, body string, id *identity.Identity, headers ...string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if id != nil {
		h, err := codec.Sign(*id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(identity.Header, h)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return resp{webtest.Do(t, app, checker, req)}
}

func jsonBody(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jobBody is a valid create body; change fields per case.
func jobBody(title string, cityID int64) map[string]any {
	return map[string]any{
		"title":       title,
		"company":     "Acme Coworking",
		"description": "<p>Run the <strong>community</strong>.</p>",
		"job_type":    "fulltime",
		"tags":        "Community, Events",
		"id_city":     cityID,
	}
}

type createResult struct {
	JobID          int64  `json:"job_id"`
	PageURL        string `json:"page_url"`
	HashIdentifier string `json:"hash_identifier"`
	Status         string `json:"status"`
	Action         string `json:"action"`
	DedupeHash     string `json:"dedupe_hash"`
	IsPaid         bool   `json:"is_paid"`
	City           struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"city"`
	ApplyURL       *string `json:"apply_url"`
	PlanPrice      int     `json:"plan_price"`
	ExpirationDays int     `json:"expiration_days"`
	Message        string  `json:"message"`
	ViewURL        *string `json:"view_url"`
	PaymentURL     *string `json:"payment_url"`
	EditURL        string  `json:"edit_url"`
	UnpublishURL   string  `json:"unpublish_url"`
}

func create(t *testing.T, id identity.Identity, body map[string]any) createResult {
	t.Helper()
	return createOn(t, appFlat, id, body)
}

// createOn is create on another app.
func createOn(t *testing.T, app *fiber.App, id identity.Identity, body map[string]any) createResult {
	t.Helper()
	r := do(t, app, "POST", "/v2/jobs", jsonBody(t, body), &id)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var cr createResult
	r.data(t, &cr)
	return cr
}
