// Package tests drives the gateway through real HTTP requests, with its real
// Postgres key store, the real Redis, and backends that verify the signed
// identity with libs/identity exactly as the real services do.
package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coworkjobs/coworkjobs/api"
	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/gatewayapp"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/proxy"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/responsecache"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus/stores/keydb"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
	"github.com/coworkjobs/coworkjobs/services/gateway/migrations"
)

const secret = "gateway-test-secret-0123456789abcdef"

var (
	dbURL    string
	redisURL = envOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	schema := pgtest.Schema{Name: "gateway", Migrations: migrations.FS}
	code := pgtest.MainMigrated(m, "gateway", schema, func(db pgtest.Migrated) error {
		dbURL, testPool = db.URL, db.Pool
		return nil
	})
	// The gateway binary built for the process tests goes with them.
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

var testPool *pgxpool.Pool

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer collects log output from concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// listen serves srv on a loopback port until the test ends.
func listen(t testing.TB, srv *web.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func webConfig() web.Config {
	return web.Config{HTTPAddr: "127.0.0.1:0", BodyLimitBytes: 64 << 10, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, IdleTimeout: 10 * time.Second, RequestTimeout: 3 * time.Second,
		ShutdownTimeout: 5 * time.Second, Concurrency: 256}
}

// echoHeader marks the answers of a test backend.
const echoHeader = "X-Test-Backend"

var checker = func() *contract.Checker {
	c, err := contract.New()
	if err != nil {
		panic(err)
	}
	return c
}()

// seen is what an echo backend reports about the request it received.
type seen struct {
	Identity identity.Identity `json:"identity"`
	Path     string            `json:"path"`
	Query    string            `json:"query"`
	Headers  map[string]string `json:"headers"`
}

// startBackend runs a backend that verifies the identity like every real
// service and echoes what it received. POST bodies are decoded strictly.
func startBackend(t testing.TB, name string) string {
	t.Helper()
	return signedBackend(t, name, func(c *fiber.Ctx) error {
		c.Set(echoHeader, name) // its answers are not the API's: do does not contract-check them
		if d := c.Query("sleep_ms"); d != "" {
			ms, _ := strconv.Atoi(d)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		if c.Method() == fiber.MethodPost {
			var body map[string]any
			if err := web.DecodeJSON(c, &body); err != nil {
				return err
			}
		}
		hdr := map[string]string{}
		c.Request().Header.VisitAll(func(k, v []byte) { hdr[string(k)] = string(v) })
		status := http.StatusOK
		if c.Method() == fiber.MethodPost {
			status = http.StatusCreated
		}
		return web.OK(c, status, seen{Identity: *identity.From(c), Path: c.Path(), Query: string(c.Request().URI().QueryString()), Headers: hdr})
	})
}

// signedBackend runs a test backend that verifies the identity as every real
// service does and answers /v2/... with h.
func signedBackend(t testing.TB, name string, h fiber.Handler) string {
	t.Helper()
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(webConfig(), logx.NewTo(io.Discard, name, "error"), name)
	srv.App.Use("/v2", codec.Middleware(), h)
	return listen(t, srv)
}

type gatewayOpts struct {
	redisURL    string
	window      time.Duration
	writeLimit  int
	publicLimit int
	readLimit   int    // 0: 10 000, far from any test; -1: off
	publicRead  int    // likewise for public GETs per IP
	backendURL  string // one URL for all four backends; "" starts an echo backend
	timeout     time.Duration
	cacheTTL    time.Duration
	prefix      string // Redis key prefix; "" gives the instance its own budget space
	noAccessLog bool   // as make bench runs it (ACCESS_LOG=false)
	cacheBytes  uint64 // the response cache's MaxBytes; 0: off
	cacheStore  string // RESPONSE_CACHE_STORE; "": memory
}

type gateway struct {
	base    string
	keys    *keybus.Business
	logs    *syncBuffer
	prefix  string
	metrics *prometheus.Registry
}

func startGateway(t testing.TB, o gatewayOpts) *gateway {
	t.Helper()
	if o.redisURL == "" {
		o.redisURL = redisURL
	}
	if o.window == 0 {
		o.window = time.Minute
	}
	if o.writeLimit == 0 {
		o.writeLimit = 120
	}
	if o.publicLimit == 0 {
		o.publicLimit = 10
	}
	for _, l := range []*int{&o.readLimit, &o.publicRead} {
		switch *l {
		case 0:
			*l = 10000
		case -1:
			*l = 0
		}
	}
	if o.timeout == 0 {
		o.timeout = 2 * time.Second
	}
	if o.backendURL == "" {
		o.backendURL = startBackend(t, "echo")
	}
	logs := &syncBuffer{}
	log := logx.NewTo(logs, "gateway", "info")
	rdb, err := redisx.Open(o.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	codec, _ := identity.NewCodec(secret)
	backends := map[string]*proxy.Backend{}
	for _, name := range []string{routes.BackendJobs, routes.BackendDirectory, routes.BackendContent, routes.BackendCommunity} {
		b, err := proxy.NewBackend(name, o.backendURL, proxy.BackendOptions{Timeout: o.timeout, MaxConns: 64})
		if err != nil {
			t.Fatal(err)
		}
		backends[name] = b
	}
	keys := keybus.New(keydb.New(testPool), log, o.cacheTTL)
	prefix := o.prefix
	if prefix == "" {
		prefix = "test:" + randomHex(6) + ":"
	}
	m := metrics.New()
	srv := web.New(webConfig(), log, "gateway")
	srv.App.Use(m.Middleware())
	gw, err := gatewayapp.Routes(srv.App, gatewayapp.Config{
		Log: log, Keys: keys, Codec: codec, Redis: rdb, Backends: backends, Registry: m.Registry,
		Limiter:             ratelimit.New(rdb, prefix, o.window, log),
		WriteLimitPerMinute: o.writeLimit, PublicLimitPerMinute: o.publicLimit,
		ReadLimitPerMinute: o.readLimit, PublicReadLimitPerMinute: o.publicRead,
		PublicBaseURL: "http://gateway.test", Version: "test", OpenAPIYAML: api.OpenAPIYAML, Docs: api.Docs,
		AccessLog: !o.noAccessLog, CORSAllowOrigins: "*",
		Changes: changes.New(rdb, prefix), Cache: responsecache.Config{Store: o.cacheStore, MaxBytes: o.cacheBytes, TTL: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Fallback()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gw.RunBackground(ctx)
	return &gateway{base: listen(t, srv), keys: keys, logs: logs, prefix: prefix, metrics: m.Registry}
}

// newKey creates a key and returns its full string.
func (g *gateway) newKey(t testing.TB, n keybus.NewKey) (keybus.Key, string) {
	t.Helper()
	if n.Name == "" {
		n.Name = "test " + randomHex(3)
	}
	k, raw, err := g.keys.Create(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return k, raw
}

type response struct {
	status int
	header http.Header
	env    web.Envelope
	raw    []byte
}

func (r response) data(t *testing.T, into any) {
	t.Helper()
	b, _ := json.Marshal(r.env.Data)
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

// postConcurrently sends n POST /v2/jobs at once, spread over bases in
// turn, and counts the answers by status.
func postConcurrently(t *testing.T, n int, hdr map[string]string, bases ...string) map[int]int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", bases[i%len(bases)]+"/v2/jobs", `{}`, hdr)
			mu.Lock()
			codes[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

var client = &http.Client{Timeout: 10 * time.Second}

func do(t *testing.T, method, url, body string, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json") // hdr may say otherwise
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	// What the gateway answers itself (its own routes, and errors of routes it
	// proxies) must be what the OpenAPI document promises.
	// A request that carries echoHeader itself expects a test backend's
	// answer even where the gateway replays it from its cache.
	testAnswer := resp.Header.Get(echoHeader) != "" || (req.Header.Get(echoHeader) != "" && resp.StatusCode < 300)
	if !testAnswer && checker.Documented(req.Method, req.URL.Path) {
		if err := checker.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
			t.Errorf("contract: %v", err)
		}
	}
	if resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent || method == http.MethodHead {
		return r // no body
	}
	if err := json.Unmarshal(raw, &r.env); err != nil {
		t.Fatalf("%s %s: not an envelope (%d): %q", method, url, resp.StatusCode, raw)
	}
	if r.env.Status != r.status {
		t.Fatalf("%s %s: envelope status %d != HTTP %d", method, url, r.env.Status, r.status)
	}
	return r
}

func keyStore() *keydb.Store { return keydb.New(testPool) }
