package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/service"
)

// syncBuf is a log sink the servers' goroutines write to while a test reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

var dbURL string

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main("libs_service", m.Run, func(u string) { dbURL = u }))
}

// spec is a command whose schema holds one table.
func spec(name, schema string) service.Spec {
	return service.Spec{Name: name, Schema: schema, Migrations: fstest.MapFS{"00001_init.sql": {
		Data: []byte("-- +goose Up\nCREATE TABLE things (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE things;\n")}}}
}

// start runs the service in the background until ctx ends.
func start[C any, PC interface {
	*C
	service.Config
}](ctx context.Context, spec service.Spec, wire func(context.Context, *service.Process, *C) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- service.Run[C, PC](ctx, logx.NewTo(io.Discard, "test", "info"), spec, wire) }()
	return done
}

// env sets what every test's command reads; the tests are not parallel.
func env(t *testing.T, kv ...string) {
	t.Helper()
	base := []string{"DATABASE_URL", dbURL, "INTERNAL_IDENTITY_SECRET", strings.Repeat("s", 32), "LOG_LEVEL", "info",
		"MIGRATE_ONLY", "", "ADMIN_ADDR", "off", "HTTP_ADDR", "127.0.0.1:1", "OTEL_SDK_DISABLED", "true"}
	kv = append(base, kv...)
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// expect fails t unless url answers code with a body holding every fragment.
func expect(t *testing.T, url string, code int, fragments ...string) {
	t.Helper()
	got, body := get(t, url)
	if got != code {
		t.Errorf("%s: %d, want %d: %s", url, got, code, body)
	}
	for _, f := range fragments {
		if !strings.Contains(body, f) {
			t.Errorf("%s: %q without %q", url, body, f)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode, string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MIGRATE_ONLY applies the schema and returns before the service is wired
// (the Helm hook Job exits 0 there); LOG_LEVEL, read with the configuration,
// sets the level of the logger built before it.
func TestMigrateOnly(t *testing.T) {
	for _, tc := range []struct {
		name, level string
		logged      bool
	}{{"info", "info", true}, {"levelFromConfig", "warn", false}} {
		t.Run(tc.name, func(t *testing.T) {
			schema := "migrate_only_" + tc.name
			env(t, "MIGRATE_ONLY", "true", "LOG_LEVEL", tc.level)
			logs := &syncBuf{}
			err := service.Run(context.Background(), logx.NewTo(logs, "test", "info"),
				spec("test", strings.ToLower(schema)),
				func(context.Context, *service.Process, *config.API) error {
					t.Error("wired with MIGRATE_ONLY set")
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs.String(), "MIGRATE_ONLY is set, exiting"); got != tc.logged {
				t.Errorf("LOG_LEVEL=%s: exit line logged %t, want %t:\n%s", tc.level, got, tc.logged, logs)
			}
			pool, err := pgxpool.New(context.Background(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			var n int
			if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+strings.ToLower(schema)+".things").Scan(&n); err != nil {
				t.Fatalf("schema not migrated: %v", err)
			}
		})
	}
}

// A configuration error stops the start before any dependency, naming every
// problem.
func TestConfigError(t *testing.T) {
	env(t, "INTERNAL_IDENTITY_SECRET", "short", "LOG_LEVEL", "loud")
	err := service.Run(context.Background(), logx.NewTo(io.Discard, "test", "info"),
		spec("test", "never"),
		func(context.Context, *service.Process, *config.API) error {
			t.Error("wired with an invalid configuration")
			return nil
		})
	for _, want := range []string{"invalid configuration", "INTERNAL_IDENTITY_SECRET", `LOG_LEVEL "loud"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}

type workerConfig struct {
	config.Common
	config.Admin
}

// A worker's admin port answers /livez, /metrics (the pool's among them) and
// /readyz over its checks, 503 naming the failing one; on shutdown what the
// wiring deferred closes in reverse order, after the work has returned.
func TestWorkerAdminAndShutdown(t *testing.T) {
	admin := freeAddr(t)
	env(t, "ADMIN_ADDR", admin, "DB_MAX_CONNS", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu     sync.Mutex
		events []string
		pool   *pgxpool.Pool
	)
	note := func(e string) { mu.Lock(); defer mu.Unlock(); events = append(events, e) }
	worker := spec("test-worker", "worker")
	worker.Defaults = map[string]string{"DB_MAX_CONNS": "3"}
	done := start(ctx, worker, func(ctx context.Context, p *service.Process, cfg *workerConfig) error {
		if cfg.DBMaxConns != 3 || p.Pool.Config().MaxConns != 3 {
			t.Errorf("DB_MAX_CONNS empty: %d (pool %d), want the command's default 3", cfg.DBMaxConns, p.Pool.Config().MaxConns)
		}
		pool = p.Pool
		p.AddCheck("broken", func(context.Context) error { return errors.New("no") })
		p.AddCheck("fine", func(context.Context) error { return nil })
		p.Defer(func() { note("first deferred") })
		p.Defer(func() { note("second deferred") })
		p.Go(func(ctx context.Context) error {
			<-ctx.Done()
			note("work returned")
			return nil
		})
		return nil
	})
	expect(t, "http://"+admin+"/readyz", http.StatusServiceUnavailable, "broken: down\n")
	expect(t, "http://"+admin+"/livez", http.StatusOK)
	expect(t, "http://"+admin+"/metrics", http.StatusOK, "pgxpool_max_connections 3")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"work returned", "second deferred", "first deferred"}; strings.Join(events, ",") != strings.Join(want, ",") {
		t.Errorf("shutdown order %v, want %v", events, want)
	}
	if err := pool.Ping(context.Background()); err == nil {
		t.Error("the pool is still open after Run returned")
	}
}

// An API's server is built before the wiring: its /readyz holds the pool's
// check and the wiring's, the admin port's /readyz answers with the
// server's readiness, and unknown paths get the fallback's 404.
func TestAPIReadinessOnAdminPort(t *testing.T) {
	httpAddr, admin := freeAddr(t), freeAddr(t)
	env(t, "HTTP_ADDR", httpAddr, "ADMIN_ADDR", admin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var down atomic.Bool // the wiring's dependency
	done := start(ctx, spec("test-api", "api"), func(ctx context.Context, p *service.Process, _ *config.API) error {
		if p.Codec == nil {
			t.Error("no identity codec")
		}
		p.API.App.Get("/hello", func(c *fiber.Ctx) error { return c.SendString("hi") })
		p.AddCheck("dependency", func(context.Context) error {
			if down.Load() {
				return errors.New("down")
			}
			return nil
		})
		return nil
	})
	expect(t, "http://"+httpAddr+"/hello", http.StatusOK, "hi")
	expect(t, "http://"+httpAddr+"/nothing", http.StatusNotFound) // the fallback's
	expect(t, "http://"+admin+"/readyz", http.StatusOK)
	down.Store(true)
	expect(t, "http://"+admin+"/readyz", http.StatusServiceUnavailable, "api: down\n")
	expect(t, "http://"+httpAddr+"/readyz", http.StatusServiceUnavailable, `"dependency":"down"`, `"postgres":"up"`)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A tool gets the migrated pool and its configuration, and no admin port.
func TestRunTool(t *testing.T) {
	env(t, "ADMIN_ADDR", "")
	tool := spec("", "tool")
	tool.Defaults = map[string]string{"DB_MAX_CONNS": "2"}
	err := service.RunTool(context.Background(), logx.NewTo(io.Discard, "test", "info"),
		tool,
		func(ctx context.Context, pool *pgxpool.Pool, cfg *config.Common) error {
			if cfg.DBMaxConns != 2 {
				t.Errorf("DB_MAX_CONNS %d, want the tool's default 2", cfg.DBMaxConns)
			}
			_, err := pool.Exec(ctx, "INSERT INTO things VALUES (1)")
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
}

// A seeder reads its command line before anything connects, then loads
// through the migrated pool.
func TestSeed(t *testing.T) {
	env(t, "ADMIN_ADDR", "")
	var flags []string
	loaded := false
	service.Seed("test-seed", spec("", "seeded"), "usage: test-seed demo [flags]", []string{"demo", "-n", "3"},
		map[string]service.SeedCommand{"demo": {
			Args: func(args []string) error { flags = args; return nil },
			Load: func(ctx context.Context, _ *slog.Logger, pool *pgxpool.Pool) error {
				if !slices.Equal(flags, []string{"-n", "3"}) {
					t.Errorf("load ran with arguments %q read", flags)
				}
				loaded = true
				_, err := pool.Exec(ctx, "INSERT INTO things VALUES (1)")
				return err
			}}})
	if !loaded {
		t.Fatal("load did not run")
	}
}

// A command line names one command, which takes only the arguments it reads.
func TestSeedCommandLine(t *testing.T) {
	refuse := errors.New("bad flag")
	commands := map[string]service.SeedCommand{
		"demo": {},
		"synthetic": {Args: func(args []string) error {
			if slices.Contains(args, "-bad") {
				return refuse
			}
			return nil
		}},
	}
	tests := []struct {
		name string
		args []string
		err  string // "" for none
	}{
		{"demo", []string{"demo"}, ""},
		{"withArguments", []string{"synthetic", "-n", "3"}, ""},
		{"missing", nil, "missing command"},
		{"unknown", []string{"prod"}, `unknown command "prod"`},
		{"noArgumentsTaken", []string{"demo", "extra"}, "demo takes no arguments"},
		{"argumentsRefused", []string{"synthetic", "-bad"}, "synthetic: bad flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := service.SeedCommandFor(tc.args, commands)
			if got := fmt.Sprint(err); (err == nil) != (tc.err == "") || err != nil && got != tc.err {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
