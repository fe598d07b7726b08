package web

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/telemetry"
)

// TracerName is the instrumentation scope of the server spans.
const TracerName = "github.com/coworkjobs/coworkjobs/libs/web"

// Tracer is the tracer of TracerName. Taken once: otel.Tracer looks the scope
// up under a lock on every call (seen in the CPU profile of `make bench` row
// a), and a tracer of the global provider follows a provider installed later.
var Tracer = otel.Tracer(TracerName)

// Option tunes New.
type Option func(*options)

type options struct {
	publicEndpoint bool
	mutable        bool // benchmarks only (export_test.go): Fiber's default buffers
}

// PublicEndpoint marks the server as the public edge (the gateway): a trace
// context sent by a client does not become the parent of the request's span
// (a client could otherwise force sampling or join someone else's trace); it
// is kept as a link. Client baggage is dropped.
func PublicEndpoint() Option { return func(o *options) { o.publicEndpoint = true } }

// AttrRequestID is the span attribute holding the request id.
const AttrRequestID = attribute.Key("coworkjobs.request_id")

// tracing starts the server span of every request, named by method and route
// template ("GET /v2/jobs"; just "GET" when no route matched). Attributes are
// the route template, never the raw path or query: a query may carry an
// api_key. Probes (GETs of /livez and /readyz) are not traced.
func tracing(o options) fiber.Handler {
	return func(c *fiber.Ctx) error {
		switch c.Path() {
		case "/livez", "/readyz":
			if c.Method() == fiber.MethodGet {
				return c.Next()
			}
		}
		method := MethodLabel(c)
		carrier := telemetry.FastHTTPCarrier{H: &c.Request().Header}
		startOpts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.URLScheme(c.Protocol()))}
		ctx := c.UserContext()
		if o.publicEndpoint {
			if remote := trace.SpanContextFromContext(telemetry.Propagator.Extract(ctx, carrier)); remote.IsValid() {
				startOpts = append(startOpts, trace.WithLinks(trace.Link{SpanContext: remote}))
			}
		} else {
			ctx = telemetry.Propagator.Extract(ctx, carrier)
		}
		ctx, span := Tracer.Start(ctx, method, startOpts...)
		defer span.End()
		c.SetUserContext(ctx)

		err := c.Next()
		if !span.IsRecording() {
			// Sampled out: nothing set below would be kept.
			return err
		}
		status := Status(c, err)
		if route := RouteTemplate(c); route != "unmatched" {
			span.SetName(method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(status), AttrRequestID.String(RequestID(c)))
		if status >= 500 {
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			span.SetStatus(codes.Error, msg)
		}
		return err
	}
}
