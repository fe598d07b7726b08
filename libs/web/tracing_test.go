package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

var (
	recorderOnce sync.Once
	recorder     *tracetest.SpanRecorder
)

// spans installs (once per package) a tracer provider recording every span
// in memory, and returns the spans of trace id.
func spans(traceID trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID() == traceID {
			out = append(out, s)
		}
	}
	return out
}

func installRecorder() {
	recorderOnce.Do(func() {
		recorder = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)))
		otel.SetTextMapPropagator(telemetry.Propagator)
	})
}

const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

func tracedServer(t *testing.T, logs *bytes.Buffer, opts ...web.Option) string {
	installRecorder()
	srv := web.New(testConfig(), logx.NewTo(logs, "test", "info"), "test", opts...)
	srv.App.Get("/v2/things/:id", func(c *fiber.Ctx) error {
		srv := c.UserContext()
		logx.NewTo(logs, "test", "info").InfoContext(srv, "handling", "thing", c.Params("id"))
		return web.OK(c, 200, fiber.Map{"ok": true})
	})
	srv.Fallback()
	base, _, _ := start(t, srv)
	return base
}

func get(t *testing.T, url string, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// serverSpan finds the ended server span of the request with id rid.
func serverSpan(t *testing.T, rid string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range recorder.Ended() {
		for _, a := range s.Attributes() {
			if a.Key == web.AttrRequestID && a.Value.AsString() == rid {
				return s
			}
		}
	}
	t.Fatalf("no server span with request id %s", rid)
	return nil
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes() {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

func TestTracingSpanNamedByRouteTemplateJoinsCallerTrace(t *testing.T) {
	var logs bytes.Buffer
	base := tracedServer(t, &logs)
	resp := get(t, base+"/v2/things/zqxw?api_key=svc_live_SECRETSECRET&x=1",
		map[string]string{"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01"})
	s := serverSpan(t, resp.Header.Get(web.HeaderRequestID))
	if s.Name() != "GET /v2/things/:id" || s.SpanKind() != trace.SpanKindServer {
		t.Fatalf("span %q kind %v", s.Name(), s.SpanKind())
	}
	if s.SpanContext().TraceID().String() != clientTrace || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("span not a child of the caller's: trace %s parent %s", s.SpanContext().TraceID(), s.Parent().SpanID())
	}
	a := attrs(s)
	if a["http.route"] != "/v2/things/:id" || a["http.response.status_code"] != "200" || a["http.request.method"] != "GET" {
		t.Fatalf("attributes %v", a)
	}
	for k, v := range a {
		if strings.Contains(v, "SECRET") || strings.Contains(v, "zqxw") || strings.Contains(v, "api_key") {
			t.Fatalf("attribute %s=%q carries the raw path or query", k, v)
		}
	}
	// The handler's log line carries the request's ids.
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, `"handling"`) {
			_ = json.Unmarshal([]byte(l), &line)
		}
	}
	if line["trace_id"] != clientTrace || line["span_id"] != s.SpanContext().SpanID().String() ||
		line["request_id"] != resp.Header.Get(web.HeaderRequestID) {
		t.Fatalf("log line lacks the request's ids: %v", line)
	}
}

func TestTracingUnmatchedPathIsNotALabel(t *testing.T) {
	var logs bytes.Buffer
	base := tracedServer(t, &logs)
	resp := get(t, base+"/v2/nothing/here/123", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	s := serverSpan(t, resp.Header.Get(web.HeaderRequestID))
	a := attrs(s)
	if s.Name() != "GET" || a["http.route"] != "" || a["http.response.status_code"] != "404" {
		t.Fatalf("span %q attributes %v", s.Name(), a)
	}
}

func TestTracingPublicEndpointLinksClientTrace(t *testing.T) {
	var logs bytes.Buffer
	base := tracedServer(t, &logs, web.PublicEndpoint())
	resp := get(t, base+"/v2/things/1", map[string]string{
		"traceparent": "00-" + clientTrace + "-00f067aa0ba902b7-01", "baggage": "user=forged"})
	s := serverSpan(t, resp.Header.Get(web.HeaderRequestID))
	if s.SpanContext().TraceID().String() == clientTrace || s.Parent().IsValid() {
		t.Fatal("a public endpoint adopted the client's trace")
	}
	if len(s.Links()) != 1 || s.Links()[0].SpanContext.TraceID().String() != clientTrace {
		t.Fatalf("links %v", s.Links())
	}
	if n := len(spans(s.SpanContext().TraceID())); n != 1 {
		t.Fatalf("%d spans in the new trace", n)
	}
}

func TestTracingSkipsProbes(t *testing.T) {
	var logs bytes.Buffer
	base := tracedServer(t, &logs)
	before := len(recorder.Ended())
	get(t, base+"/livez", nil)
	get(t, base+"/readyz", nil)
	if after := len(recorder.Ended()); after != before {
		t.Fatalf("probes made %d spans", after-before)
	}
}
