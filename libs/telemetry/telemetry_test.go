package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSetupWithoutEndpointGivesIDsButRecordsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if telemetry.Enabled() {
		t.Fatal("enabled without an endpoint")
	}
	shutdown, err := telemetry.Setup(context.Background(), "test", "1", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	ctx, span := otel.Tracer("t").Start(context.Background(), "op")
	defer span.End()
	if !span.SpanContext().IsValid() || span.IsRecording() || span.SpanContext().IsSampled() {
		t.Fatalf("want ids without recording: valid=%v recording=%v", span.SpanContext().IsValid(), span.IsRecording())
	}
	var buf bytes.Buffer
	logx.NewTo(&buf, "test", "info").InfoContext(logx.WithRequestID(ctx, "req-1"), "hello")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["trace_id"] != span.SpanContext().TraceID().String() || line["span_id"] != span.SpanContext().SpanID().String() ||
		line["request_id"] != "req-1" || line["service"] != "test" {
		t.Fatalf("log line %v", line)
	}
}

func TestSetupRejectsUnknownExporterAndProtocol(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := telemetry.Setup(context.Background(), "test", "", quiet()); err == nil {
		t.Fatal("want an error for OTEL_TRACES_EXPORTER=zipkin")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := telemetry.Setup(context.Background(), "test", "", quiet()); err == nil {
		t.Fatal("want an error for http/json")
	}
}

func TestSetupWithEndpointExportsOnShutdown(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
			shutdown, err := telemetry.Setup(context.Background(), "test", "", quiet())
			if err != nil {
				t.Fatal(err)
			}
			_, span := otel.Tracer("t").Start(context.Background(), "op")
			if !span.IsRecording() || !span.SpanContext().IsSampled() {
				t.Fatal("with an exporter the default sampler (parentbased_always_on) records a root span")
			}
			span.End()
			// Nothing listens on port 1; the failed flush is not the point here.
			_ = shutdown(context.Background())
		})
	}
}

func TestSDKDisabledIsNoop(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	if telemetry.Enabled() {
		t.Fatal("enabled although disabled")
	}
	if _, err := telemetry.Setup(context.Background(), "test", "", quiet()); err != nil {
		t.Fatal(err)
	}
}
