// Package proxy forwards requests to the backends: pooled, bounded
// connections per backend, balanced per connection (with redials) or per
// request over the addresses DNS gives, the caller's identity signed on each
// request, and the answer relayed whole or streamed.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
)

// Backend is one upstream service with pooled, bounded connections: the
// gateway reuses connections (no dial per request) and never opens more than
// MaxConns to one address, so overload queues instead of growing memory.
// Answers up to streamThreshold are read whole; larger or chunked ones (the
// unpaginated job list) are streamed to the client as they arrive, so the
// gateway holds a few buffers per request whatever the size of the answer.
type Backend struct {
	Name    string
	host    string
	pool    upstream
	set     *endpointSet // BalanceDNS only
	timeout time.Duration
}

// upstream sends one request: a single pool (BalanceConnection) or a pool
// per resolved address (BalanceDNS).
type upstream interface {
	DoTimeout(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error
}

// BackendOptions bound the pooled client of one backend.
type BackendOptions struct {
	Timeout  time.Duration // per request, dial and wait for a free connection included
	MaxConns int           // per address
	// MaxConnAge closes a pooled connection (with Connection: close on its
	// last request, so nothing fails) once it is this old; 0 keeps it for
	// ever. Behind a Kubernetes Service kube-proxy balances connections, not
	// requests: without an age limit a replica added by the HPA gets none of
	// the gateway's traffic until something breaks the pool.
	MaxConnAge time.Duration
	// Balance is BalanceConnection (the default) or BalanceDNS.
	Balance string
	// ResolveEvery is how often BalanceDNS resolves the host again.
	ResolveEvery time.Duration
	Log          *slog.Logger
	// lookup replaces the process' resolver (tests).
	lookup func(ctx context.Context, host string) ([]string, error)
}

// NewBackend parses rawURL (http://host:port) and builds the pooled client.
// With BalanceDNS the host is resolved once here (a failure leaves the
// backend without addresses until RunBackground resolves it again).
func NewBackend(name, rawURL string, o BackendOptions) (*Backend, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("backend %s: invalid URL %q", name, rawURL)
	}
	newClient := func(addr string) *fasthttp.HostClient {
		c := &fasthttp.HostClient{
			Addr:                          addr,
			IsTLS:                         u.Scheme == "https",
			MaxConns:                      o.MaxConns,
			MaxConnDuration:               o.MaxConnAge,
			MaxConnWaitTimeout:            o.Timeout,
			MaxIdleConnDuration:           30 * time.Second,
			ReadTimeout:                   o.Timeout,
			WriteTimeout:                  o.Timeout,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			StreamResponseBody:            true,
			MaxResponseBodySize:           streamThreshold,
		}
		c.RetryIf = func(req *fasthttp.Request) bool { return retryIf(c, req) }
		return c
	}
	b := &Backend{Name: name, host: u.Host, timeout: o.Timeout}
	switch o.Balance {
	case "", BalanceConnection:
		b.pool = redialing{newClient(u.Host)}
	case BalanceDNS:
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		if o.ResolveEvery <= 0 {
			return nil, fmt.Errorf("backend %s: resolve interval must be positive", name)
		}
		log := o.Log
		if log == nil {
			log = slog.Default()
		}
		lookup := o.lookup
		if lookup == nil {
			lookup = lookupHost
		}
		b.set = &endpointSet{host: u.Hostname(), port: port, newClient: newClient, lookup: lookup, log: log,
			name: name, every: o.ResolveEvery}
		b.set.refresh(context.Background())
		b.pool = b.set
	default:
		return nil, fmt.Errorf("backend %s: unknown balance mode %q (want %s or %s)", name, o.Balance, BalanceConnection, BalanceDNS)
	}
	return b, nil
}

// redialing sends through one pool (BalanceConnection), and dials again
// when a dial fails: nothing was sent, so even a POST may, and behind a
// Kubernetes Service the next connection goes to another pod. A rolling
// restart otherwise answered 503 for the moment kube-proxy still sent new
// connections to a pod that had stopped listening (make test-cluster).
// fasthttp itself retries only failures on connections it had.
type redialing struct{ c *fasthttp.HostClient }

func (r redialing) DoTimeout(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 25 * time.Millisecond)
		}
		if err = r.c.DoDeadline(req, resp, deadline); err == nil || !dialFailed(err) || time.Now().After(deadline) {
			return err
		}
	}
	return err
}

// Run keeps a BalanceDNS backend's addresses current until ctx ends.
func (b *Backend) Run(ctx context.Context) {
	if b.set != nil {
		b.set.run(ctx)
	}
}

// Endpoints is how many addresses requests are balanced over: those of the
// last resolve with BalanceDNS, else 1.
func (b *Backend) Endpoints() int {
	if b.set != nil {
		return b.set.Len()
	}
	return 1
}

// EndpointsGauge is gateway_upstream_endpoints of b, labelled name.
func EndpointsGauge(name string, b *Backend) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "gateway_upstream_endpoints",
		Help:        "Addresses the gateway balances a backend's requests over (UPSTREAM_BALANCE=dns: the last resolve; else 1).",
		ConstLabels: prometheus.Labels{"backend": name},
	}, func() float64 { return float64(b.Endpoints()) })
}

// Ready reports whether b's /readyz answers 200 within timeout, through the
// pool the requests use.
func (b *Backend) Ready(timeout time.Duration) bool {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	req.SetRequestURI("http://" + b.host + "/readyz")
	ok := b.pool.DoTimeout(req, resp, timeout) == nil && resp.StatusCode() == http.StatusOK
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(resp)
	return ok
}

// retryIf runs when a request failed on its connection. On a pooled one that
// most often means the backend restarted (a rolling deploy) and every idle
// connection to it is dead: they are all dropped at once, so the retry dials
// a new one instead of trying the dead ones in turn (fasthttp gives up after
// five attempts, and the client got a 503 while dead connections were left).
// GET and HEAD are retried; a POST only when the backend closed the
// connection before answering anything (fasthttp's own rule). fasthttp 1.51
// does not say which error it was: after a timeout (the request's whole
// deadline, so no retry follows) the idle connections go too, which costs a
// few dials later.
func retryIf(c *fasthttp.HostClient, req *fasthttp.Request) bool {
	c.CloseIdleConnections()
	return req.Header.IsGet() || req.Header.IsHead()
}

// streamThreshold is the largest answer the gateway reads whole before
// relaying it.
const streamThreshold = 64 << 10

// stripped request headers: credentials stay at the edge, and a client may not
// forge the identity or forwarding headers.
var stripped = []string{"X-API-Key", fiber.HeaderAuthorization, identity.Header, fiber.HeaderXForwardedFor,
	"X-Forwarded-Host", fiber.HeaderXForwardedProto, fiber.HeaderConnection, "Keep-Alive", "Proxy-Authorization",
	"Te", "Trailer", "Upgrade", "Proxy-Connection", fiber.HeaderCookie,
	// The gateway has read the whole body already (and answered the client's
	// 100-continue itself); forwarded, Expect makes the backend client wait
	// for a 100 that never comes and the request fails as a 503.
	fiber.HeaderExpect,
	// A client's trace context and baggage stop here: the gateway's own span
	// is the parent the backend sees (injected below).
	"Traceparent", "Tracestate", "Baggage"}

// Forward sends c's request to b with id signed by codec, and relays the
// answer into c's response. keepCookies lets the Cookie header through (the
// pages' CSRF cookie), which API routes drop. A streamed answer is also
// handed to whole once it has been relayed entirely, when it is at most
// whole.Max bytes (nil: never).
func (b *Backend) Forward(c *fiber.Ctx, codec *identity.Codec, id identity.Identity, keepCookies bool, whole *Whole) error {
	signed, err := codec.Sign(id, 30*time.Second)
	if err != nil {
		return fmt.Errorf("sign identity: %w", err)
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	c.Request().Header.CopyTo(&req.Header)
	for _, h := range stripped {
		if h == fiber.HeaderCookie && keepCookies {
			continue
		}
		req.Header.Del(h)
	}
	req.SetBodyRaw(c.Body())
	// Rebuild the URI: path as routed, query without api_key so the key never
	// reaches a backend, its logs or its traces.
	uri := req.URI()
	uri.SetPath(c.Path())
	uri.SetQueryStringBytes(auth.WithoutAPIKey(c.Request().URI().QueryString()))
	uri.SetScheme("http")
	uri.SetHost(b.host)
	req.SetHost(b.host)
	req.Header.Set(identity.Header, signed)
	req.Header.Set(web.HeaderRequestID, id.RequestID)
	req.Header.Set(fiber.HeaderXForwardedFor, id.ClientIP)
	req.Header.Set(fiber.HeaderXForwardedProto, c.Protocol())

	// A client span per hop, named by the route template (never the raw path
	// or query, which may have carried an api_key); its context travels to the
	// backend as W3C traceparent.
	route := web.RouteTemplate(c)
	ctx, span := web.Tracer.Start(c.UserContext(), web.MethodLabel(c)+" "+route,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(web.MethodLabel(c)), semconv.HTTPRoute(route),
			semconv.ServerAddress(b.host), attribute.String("coworkjobs.backend", b.Name)))
	defer span.End()
	telemetry.InjectFastHTTP(ctx, &req.Header)

	up := fasthttp.AcquireResponse()
	if err := b.pool.DoTimeout(req, up, b.timeout); err != nil {
		fasthttp.ReleaseResponse(up)
		span.SetStatus(codes.Error, err.Error())
		return upstreamError(b.Name, err)
	}
	resp := c.Response()
	relay(up, resp, whole)
	if req.Header.IsHead() && resp.Header.ContentLength() == -2 {
		// The backend's HEAD answer came without a length, which fasthttp
		// would relay as "Transfer-Encoding: identity", a header clients
		// refuse (Go's among them); no length is sent as chunked instead.
		resp.Header.SetContentLength(-1)
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode()))
	if resp.StatusCode() >= 500 {
		span.SetStatus(codes.Error, "")
	}
	resp.Header.Del(fiber.HeaderConnection)
	resp.Header.Del("Keep-Alive")
	resp.Header.Del(fiber.HeaderServer)
	return nil
}

// relay moves the backend's answer up into resp (the backend's headers
// replace whatever was set before) and takes ownership of up. A body read
// whole changes hands without a copy; a streamed one is handed over as a
// stream that releases up when the client has been sent all of it.
func relay(up, resp *fasthttp.Response, whole *Whole) {
	up.Header.CopyTo(&resp.Header)
	n := up.Header.ContentLength()
	if up.IsBodyStream() && (n < 0 || n > streamThreshold) {
		rb := &relayedBody{up: up, r: up.BodyStream(), left: int64(n)}
		if whole != nil && n <= whole.Max {
			rb.whole, rb.kept = whole, make([]byte, 0, max(n, streamThreshold))
		}
		resp.SetBodyStream(rb, n)
		return
	}
	// SwapBody drains the stream over the already read body (closing it
	// releases the connection); the body buffer then changes hands, and resp's
	// old one goes back to the pool with up.
	up.SwapBody(resp.SwapBody(up.SwapBody(nil)))
	fasthttp.ReleaseResponse(up)
}

// relayedBody is a backend's streamed answer on its way to the client. When
// the client stops reading early (it went away), the rest of the answer is
// still on the backend connection, so that connection is closed rather than
// returned to the pool, where the next request would read the leftovers.
type relayedBody struct {
	up   *fasthttp.Response
	r    io.Reader
	left int64 // bytes still due with a Content-Length; negative when chunked
	done bool
	// whole gets the bytes kept so far once all are relayed (nil: none are
	// kept, or there were more than whole.Max).
	whole *Whole
	kept  []byte
}

// Whole receives a streamed answer relayed entirely (the response cache
// keeps it). Take runs after the handler, once the client has been sent
// every byte; the body is its own.
type Whole struct {
	Max  int
	Take func(body []byte)
}

func (b *relayedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.left >= 0 {
		b.left -= int64(n)
	}
	if b.whole != nil {
		if len(b.kept)+n > b.whole.Max {
			b.whole, b.kept = nil, nil
		} else {
			b.kept = append(b.kept, p[:n]...)
		}
	}
	// A sized body is written with exactly its length, so EOF may never be
	// asked for; a chunked one ends with EOF after its last chunk.
	if errors.Is(err, io.EOF) || b.left == 0 {
		b.done = true
	}
	return n, err
}

// Close is called once by fasthttp when the answer is written or dropped.
func (b *relayedBody) Close() error {
	if !b.done {
		b.up.SetConnectionClose() // read by the client's release hook
	} else if b.whole != nil {
		b.whole.Take(b.kept)
	}
	err := b.up.CloseBodyStream()
	fasthttp.ReleaseResponse(b.up)
	return err
}

func upstreamError(name string, err error) *web.Error {
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return &web.Error{Status: http.StatusGatewayTimeout, Code: web.CodeTimeout,
			Message: "The " + name + " service did not answer in time; retry shortly"}
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The " + name + " service is overloaded; retry shortly"}
	}
	return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
		Message: "The " + name + " service is unavailable; retry shortly"}
}
