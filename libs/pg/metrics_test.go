package pg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/coworkjobs/coworkjobs/libs/metrics"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
)

func TestPoolCollectorPromlintCleanWithValues(t *testing.T) {
	ctx := context.Background()
	pool, err := pg.Open(ctx, dbURL, "metrics_a", pg.Options{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for range 4 {
		if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New()
	m.Registry.MustRegister(pg.NewPoolCollector(pool))
	problems, err := testutil.GatherAndLint(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "pgxpool_") {
			mt := f.GetMetric()[0]
			values[f.GetName()] = mt.GetGauge().GetValue() + mt.GetCounter().GetValue()
		}
	}
	if len(values) != 13 || values["pgxpool_max_connections"] != 3 || values["pgxpool_acquires_total"] < 4 ||
		values["pgxpool_total_connections"] < 1 {
		t.Fatalf("pool metrics %v", values)
	}
}

func TestPgxTracerMakesQuerySpansWithoutParameters(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	ctx, parent := otel.Tracer("test").Start(context.Background(), "request")
	pool, err := pg.Open(ctx, dbURL, "metrics_b", pg.Options{MaxConns: 2, Tracer: telemetry.PgxTracer()})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, "SELECT length($1::text)", "personal@example.com").Scan(&n); err != nil {
		t.Fatal(err)
	}
	parent.End()
	found := false
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != parent.SpanContext().TraceID() || s.Name() == "request" {
			continue
		}
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), "personal@example.com") {
				t.Fatalf("span %s records a query parameter in %s", s.Name(), a.Key)
			}
			if strings.Contains(a.Value.String(), "SELECT length") {
				found = true
			}
		}
	}
	if !found {
		for _, s := range rec.Ended() {
			t.Logf("span %s %v", s.Name(), s.Attributes())
		}
		t.Fatal("no query span with the SQL text in the request's trace")
	}
}
