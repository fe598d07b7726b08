// Package telemetry sets up OpenTelemetry tracing once per process from the
// standard OTEL_* environment variables, and holds the small pieces every
// service shares: the W3C propagators, the pgx and go-redis instrumentation,
// and trace-context injection into fasthttp requests (the gateway's proxy).
//
// With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// set, spans go to that OTLP collector through a batch processor, sampled by
// OTEL_TRACES_SAMPLER (default parentbased_always_on). Without an endpoint
// there is no exporter at all: spans are never recorded, but requests still
// get trace and span ids (so log lines of one request correlate across
// services) and W3C trace context still flows. OTEL_SDK_DISABLED=true turns
// the SDK off entirely.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Propagator is the W3C trace context plus baggage, set as the global one.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Shutdown flushes and stops the tracer provider.
type Shutdown func(context.Context) error

// Setup configures the global tracer provider and propagator for service
// (the default service.name; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// win). The returned Shutdown flushes pending spans; call it on exit.
func Setup(ctx context.Context, service, version string, log *slog.Logger) (Shutdown, error) {
	otel.SetTextMapPropagator(Propagator)
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		log.Info("tracing disabled", "reason", "OTEL_SDK_DISABLED")
		return func(context.Context) error { return nil }, nil
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv(), resource.WithTelemetrySDK()}
	if version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	exp, protocol, err := exporter(ctx)
	if err != nil {
		return nil, err
	}
	var tp *sdktrace.TracerProvider
	if exp == nil {
		// No exporter: spans carry ids (log correlation, propagation) but are
		// never recorded, so the hot path pays almost nothing.
		tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.NeverSample()))
		log.Info("tracing without exporter", "hint", "set OTEL_EXPORTER_OTLP_ENDPOINT to export spans")
	} else {
		// The sampler comes from OTEL_TRACES_SAMPLER / _ARG (the SDK reads
		// them; parentbased_always_on by default), batching from OTEL_BSP_*.
		tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
		log.Info("tracing to OTLP collector", "protocol", protocol)
	}
	otel.SetTracerProvider(tp)
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return tp.Shutdown(ctx)
	}, nil
}

// Enabled reports whether the environment asks for an OTLP trace exporter.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))) {
	case "", "otlp":
	default:
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// exporter builds the OTLP exporter the environment asks for, or nil. The
// exporters read OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout,
// compression, certificates) themselves.
func exporter(ctx context.Context) (sdktrace.SpanExporter, string, error) {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); v {
	case "", "otlp", "none":
	default:
		return nil, "", fmt.Errorf("OTEL_TRACES_EXPORTER %q is not supported (otlp or none)", v)
	}
	if !Enabled() {
		return nil, "", nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("otlp http exporter: %w", err)
		}
		return exp, "http/protobuf", nil
	case "grpc":
		exp, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("otlp grpc exporter: %w", err)
		}
		return exp, "grpc", nil
	}
	return nil, "", errors.New("OTEL_EXPORTER_OTLP_PROTOCOL must be grpc or http/protobuf")
}
