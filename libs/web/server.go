package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web/conncap"
)

// Config is the HTTP part of every service's configuration; services embed it.
type Config struct {
	HTTPAddr        string        `env:"HTTP_ADDR" envDefault:":8080"`
	AdminAddr       string        `env:"ADMIN_ADDR" envDefault:":9090"`
	BodyLimitBytes  int           `env:"BODY_LIMIT_BYTES" envDefault:"1048576"`
	ReadTimeout     time.Duration `env:"READ_TIMEOUT" envDefault:"5s"`
	WriteTimeout    time.Duration `env:"WRITE_TIMEOUT" envDefault:"15s"`
	IdleTimeout     time.Duration `env:"IDLE_TIMEOUT" envDefault:"60s"`
	RequestTimeout  time.Duration `env:"REQUEST_TIMEOUT" envDefault:"5s"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// DrainDelay: on SIGTERM readiness fails at once, and the server keeps
	// serving this long before it stops listening, so that load balancers
	// (Kubernetes endpoints, kube-proxy) stop sending new connections first.
	// The chart sets it (5s); 0 stops listening at once.
	DrainDelay time.Duration `env:"SHUTDOWN_DRAIN_DELAY" envDefault:"0s"`
	// PprofAddr serves net/http/pprof (metrics.ServePprof); empty is off.
	PprofAddr string `env:"PPROF_ADDR"`
	// Concurrency caps the connections served at once so that overload
	// queues in the kernel instead of growing the heap (see conncap).
	Concurrency int `env:"HTTP_CONCURRENCY" envDefault:"256"`
	// ProxyHeader names the header holding the client address (X-Forwarded-For
	// behind an ingress); it is honoured only from TrustedProxies.
	ProxyHeader    string   `env:"PROXY_HEADER"`
	TrustedProxies []string `env:"TRUSTED_PROXIES" envSeparator:","`
}

// Validate checks the values that would make the server misbehave.
func (c Config) Validate() error {
	var errs []error
	if c.HTTPAddr == "" {
		errs = append(errs, errors.New("HTTP_ADDR is empty"))
	}
	if c.BodyLimitBytes < 1024 {
		errs = append(errs, errors.New("BODY_LIMIT_BYTES must be at least 1024"))
	}
	for name, d := range map[string]time.Duration{"READ_TIMEOUT": c.ReadTimeout, "WRITE_TIMEOUT": c.WriteTimeout,
		"IDLE_TIMEOUT": c.IdleTimeout, "REQUEST_TIMEOUT": c.RequestTimeout, "SHUTDOWN_TIMEOUT": c.ShutdownTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if c.Concurrency < 1 {
		errs = append(errs, errors.New("HTTP_CONCURRENCY must be positive"))
	}
	if c.DrainDelay < 0 {
		errs = append(errs, errors.New("SHUTDOWN_DRAIN_DELAY must not be negative"))
	}
	return errors.Join(errs...)
}

// Check is one readiness dependency (a database ping, say).
type Check func(ctx context.Context) error

// Server is a Fiber app with the probes and shutdown behaviour every service needs.
type Server struct {
	App      *fiber.App
	cfg      Config
	log      *slog.Logger
	draining atomic.Bool

	mu     sync.Mutex
	checks map[string]Check
	conns  atomic.Pointer[conncap.Listener] // set by Serve
}

// HeaderRequestID carries the request id between client, gateway and backends.
const HeaderRequestID = "X-Request-ID"

// HeaderReadReplica marks an answer that read from a streaming replica
// (libs/service sets it): it may predate an acknowledged write, so the
// gateway neither caches nor names it, and strips the header.
const HeaderReadReplica = "X-Coworkjobs-Read"

// New builds the app: envelope error handler, recover, request id, a deadline
// on every request's context, and /livez + /readyz.
//
// Every request also gets an OpenTelemetry server span (see PublicEndpoint
// for the public edge), and its context carries the request id, so the logx
// handler adds request_id, trace_id and span_id to every line logged with it.
func New(cfg Config, log *slog.Logger, name string, opts ...Option) *Server {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{cfg: cfg, log: log, checks: map[string]Check{}}
	s.App = fiber.New(fiber.Config{
		AppName: name,
		// Immutable: every string and byte slice Fiber hands out (c.Method,
		// c.Path, c.Get, c.Params, c.Query, c.Body ...) is the handler's own
		// copy. Without it they are views of fasthttp's reused buffers, and
		// whatever outlives the handler (metric labels, span attributes read by
		// the batch exporter, cache keys, queued work) is rewritten by later
		// requests: /metrics answered 500 after mixed traffic. Fixing the class
		// costs a few small allocations per request (BenchmarkRequestStrings).
		Immutable:    !o.mutable,
		ErrorHandler: ErrorHandler(log),
		BodyLimit:    cfg.BodyLimitBytes,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
		IdleTimeout:  cfg.IdleTimeout,
		// The listener caps connections (conncap); fasthttp's own limit, which
		// refuses in plain text, is kept out of the way.
		Concurrency:           cfg.Concurrency + 64,
		DisableStartupMessage: true,
		// Strict routing keeps one canonical path per route, so /v2/jobs/ is a 404
		// rather than a silent alias.
		StrictRouting: true,
		CaseSensitive: true,
		// No route takes a multipart form: fasthttp would parse one before any
		// handler runs (work for nothing, and a malformed one fails the
		// request outside the envelope, as make fuzz found).
		DisablePreParseMultipartForm: true,
		ProxyHeader:                  cfg.ProxyHeader,
		EnableTrustedProxyCheck:      cfg.ProxyHeader != "",
		TrustedProxies:               cfg.TrustedProxies,
	})
	s.App.Server().HeaderReceived = closeAmbiguousFraming
	s.App.Use(s.rotateWhenFull, tracing(o), s.recover, requestID, refuseAmbiguousFraming, identityEncodingOnly, deadline(cfg.RequestTimeout))
	s.App.Get("/livez", func(c *fiber.Ctx) error {
		return OK(c, http.StatusOK, fiber.Map{"status": "ok"})
	})
	s.App.Get("/readyz", s.ready)
	return s
}

// rotateWhenFull closes the connection after the answer while draining, and
// while the cap is reached and connections wait for a slot. Only then: a
// client holding more keep-alive connections than the cap with nobody waiting
// (an ingress's upstream pool) would otherwise reconnect for every request. It runs after
// the handlers, whose forwarded answers replace the response headers.
func (s *Server) rotateWhenFull(c *fiber.Ctx) error {
	err := c.Next()
	// While draining, every answer closes its connection as well: the
	// client's next request opens a new one, which lands on another replica.
	if s.draining.Load() {
		c.Context().SetConnectionClose()
	} else if l := s.conns.Load(); l != nil && l.Full() && l.Waiting() {
		c.Context().SetConnectionClose()
	}
	return err
}

// AddCheck registers a readiness dependency.
func (s *Server) AddCheck(name string, check Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = check
}

func (s *Server) ready(c *fiber.Ctx) error {
	if s.draining.Load() {
		return WriteError(c, &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable, Message: "shutting down"})
	}
	results, failed := s.runChecks(c.UserContext())
	if failed {
		return WriteError(c, &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
			Message: "a dependency is down", Details: results})
	}
	return OK(c, http.StatusOK, fiber.Map{"status": "ok", "checks": results})
}

// Ready is what /readyz answers, as an error: the admin port answers its own
// /readyz with it (metrics.WithReadiness), so that one port tells every
// component's readiness (helm test, and the NetworkPolicies keep the API port
// of a backend to its callers).
func (s *Server) Ready(ctx context.Context) error {
	if s.draining.Load() {
		return errors.New("shutting down")
	}
	if results, failed := s.runChecks(ctx); failed {
		return fmt.Errorf("a dependency is down: %v", results)
	}
	return nil
}

func (s *Server) runChecks(ctx context.Context) (map[string]string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.mu.Lock()
	checks := make(map[string]Check, len(s.checks))
	for k, v := range s.checks {
		checks[k] = v
	}
	s.mu.Unlock()
	results := map[string]string{}
	failed := false
	for name, check := range checks {
		if err := check(ctx); err != nil {
			results[name] = "down"
			failed = true
			continue
		}
		results[name] = "up"
	}
	return results, failed
}

// recover turns a panic into a 500 envelope and logs the stack once.
func (s *Server) recover(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.ErrorContext(c.UserContext(), "panic", "panic", fmt.Sprint(r), "request_id", RequestID(c),
				"route", RouteTemplate(c), "stack", string(debug.Stack()))
			err = &Error{Status: http.StatusInternalServerError, Code: CodeServerError, Message: "Internal server error"}
		}
	}()
	return c.Next()
}

// requestID keeps a well-formed incoming id (so one id follows a request from
// the gateway through the backends) and makes one otherwise.
func requestID(c *fiber.Ctx) error {
	id := c.Get(HeaderRequestID)
	if !validRequestID(id) {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	c.Locals(HeaderRequestID, id)
	c.Set(HeaderRequestID, id)
	c.SetUserContext(logx.WithRequestID(c.UserContext(), id))
	return c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return false
		}
	}
	return true
}

// identityEncodingOnly refuses a compressed request body (415). Fiber's
// c.Body() inflates gzip, deflate and brotli bodies in full, after the body
// limit was checked on the compressed bytes, so a small request could make a
// service allocate gigabytes; no client of this API needs to compress.
func identityEncodingOnly(c *fiber.Ctx) error {
	if ce := c.Get(fiber.HeaderContentEncoding); ce != "" && !strings.EqualFold(strings.TrimSpace(ce), "identity") {
		return NewError(http.StatusUnsupportedMediaType, "Content-Encoding "+strconv.Quote(ce)+
			" is not accepted on requests; send the body uncompressed")
	}
	return c.Next()
}

// closeAmbiguousFraming runs on each request's header before its body is
// read: a request whose length is given both by Content-Length and by
// Transfer-Encoding closes its connection after its answer, whatever route
// or method answers it. A proxy in front that framed it by the other header
// takes the bytes after it for the next request, and the answer this server
// would give to what it parsed from them would reach another client
// (request smuggling; RFC 9112 6.1). Marked on the request's header, the
// close holds even where a forwarded answer replaces the response's.
func closeAmbiguousFraming(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	// fasthttp keeps only the chunked framing (a length of -1) and forgets
	// the Content-Length: the raw header block still has both.
	if h.ContentLength() == -1 && ambiguousFraming(h.RawHeaders()) {
		h.SetConnectionClose()
	}
	return fasthttp.RequestConfig{} // the server's own limits and timeouts
}

// refuseAmbiguousFraming answers such a request 400 (its connection closes,
// closeAmbiguousFraming): the body read by its chunks need not be the one
// whoever sent it meant.
func refuseAmbiguousFraming(c *fiber.Ctx) error {
	// Its chunks read, the length is the body's: the close marks it.
	if h := &c.Request().Header; h.ConnectionClose() && ambiguousFraming(h.RawHeaders()) {
		return NewError(http.StatusBadRequest, "Content-Length and Transfer-Encoding are not accepted together; send one")
	}
	return c.Next()
}

// ambiguousFraming reports whether a raw header block has both a
// Content-Length and a Transfer-Encoding field.
func ambiguousFraming(raw []byte) bool {
	var length, encoding bool
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		name, _, ok := bytes.Cut(line, []byte{':'})
		switch {
		case !ok:
		case bytes.EqualFold(name, []byte(fiber.HeaderContentLength)):
			length = true
		case bytes.EqualFold(name, []byte(fiber.HeaderTransferEncoding)):
			encoding = true
		}
	}
	return length && encoding
}

// RequestID returns the id of the current request.
func RequestID(c *fiber.Ctx) string {
	id, _ := c.Locals(HeaderRequestID).(string)
	return id
}

// deadline gives every request's context a deadline that reaches the database,
// so that no query outlives its request.
func deadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), d)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// Run serves until ctx ends, then fails readiness, keeps serving for
// DrainDelay (every answer closing its connection, so keep-alive clients move
// to other replicas), stops accepting, and waits up to ShutdownTimeout for
// in-flight requests to finish.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.HTTPAddr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener (tests listen on port 0).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	capped := conncap.New(ln, s.cfg.Concurrency)
	s.conns.Store(capped)
	ln = capped
	errc := make(chan error, 1)
	go func() { errc <- s.App.Listener(ln) }()
	go func() {
		if err := ServePprof(ctx, s.cfg.PprofAddr, s.log); err != nil {
			s.log.Error("pprof server", "error", err)
		}
	}()
	s.log.Info("http server started", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if s.cfg.DrainDelay > 0 {
		s.log.Info("draining: readiness fails, still serving", "delay", s.cfg.DrainDelay.String())
		select {
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case <-time.After(s.cfg.DrainDelay):
		}
	}
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	if err := s.App.ShutdownWithTimeout(s.cfg.ShutdownTimeout); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
