package telemetry

import (
	"context"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/propagation"
)

// PgxTracer makes every query a span (pg.Options.Tracer). The SQL text is
// recorded, never the parameters: they may hold personal data.
func PgxTracer() pgx.QueryTracer {
	return otelpgx.NewTracer(otelpgx.WithDisableConnectionDetailsInAttributes())
}

// InstrumentRedis makes every Redis command a span. Command arguments are
// left out: rate-limit keys carry client addresses. So is the caller's file
// and line, which the hook would walk the stack for on every command, traced
// or not: the CPU profile of `make bench` row a found it.
func InstrumentRedis(rdb redis.UniversalClient) error {
	return redisotel.InstrumentTracing(rdb, redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false))
}

// FastHTTPCarrier adapts fasthttp request headers to the propagators.
type FastHTTPCarrier struct{ H *fasthttp.RequestHeader }

var _ propagation.TextMapCarrier = FastHTTPCarrier{}

// Get implements propagation.TextMapCarrier.
func (c FastHTTPCarrier) Get(key string) string { return string(c.H.Peek(key)) }

// Set implements propagation.TextMapCarrier.
func (c FastHTTPCarrier) Set(key, value string) { c.H.Set(key, value) }

// Keys implements propagation.TextMapCarrier.
func (c FastHTTPCarrier) Keys() []string {
	var keys []string
	c.H.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}

// PropagationHeaders are the headers the W3C propagators read and write; a
// proxy removes a client's copies before injecting its own.
var PropagationHeaders = []string{"traceparent", "tracestate", "baggage"}

// InjectFastHTTP writes the trace context of ctx into h (traceparent,
// tracestate, baggage), replacing whatever was there.
func InjectFastHTTP(ctx context.Context, h *fasthttp.RequestHeader) {
	for _, k := range PropagationHeaders {
		h.Del(k)
	}
	Propagator.Inject(ctx, FastHTTPCarrier{H: h})
}
