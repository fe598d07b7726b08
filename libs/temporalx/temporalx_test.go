package temporalx_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

func Hello(_ context.Context, name string) (string, error) {
	if name == "" {
		return "", temporal.NewNonRetryableApplicationError("no name", "empty", nil)
	}
	return "hello " + name, nil
}

func Greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, Hello, name).Get(ctx, &out)
	return out, err
}

func run(t *testing.T, ics []interceptor.ClientInterceptor, name string) error {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var wis []interceptor.WorkerInterceptor
	for _, ic := range ics {
		wi, ok := ic.(interceptor.WorkerInterceptor)
		if !ok {
			t.Fatalf("%T is not also a worker interceptor: workers would not get it from the client", ic)
		}
		wis = append(wis, wi)
	}
	env.SetWorkerOptions(worker.Options{Interceptors: wis})
	env.RegisterWorkflow(Greet)
	env.RegisterActivity(Hello)
	env.ExecuteWorkflow(Greet, name)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env.GetWorkflowError()
}

func TestInterceptorsTraceWorkflowAndActivityAndCountOutcomes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	reg := prometheus.NewRegistry()
	ics, err := temporalx.Interceptors(reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(t, ics, "ada"); err != nil {
		t.Fatal(err)
	}
	if err := run(t, ics, ""); err == nil {
		t.Fatal("want the workflow to fail")
	}

	names := map[string]int{}
	traces := map[string]map[string]bool{}
	for _, s := range rec.Ended() {
		names[s.Name()]++
		tid := s.SpanContext().TraceID().String()
		if traces[tid] == nil {
			traces[tid] = map[string]bool{}
		}
		traces[tid][s.Name()] = true
	}
	for _, want := range []string{"RunWorkflow:Greet", "StartActivity:Hello", "RunActivity:Hello"} {
		if names[want] != 2 {
			t.Fatalf("want 2 %q spans, got spans %v", want, names)
		}
	}
	for tid, ns := range traces {
		if !(ns["RunWorkflow:Greet"] && ns["RunActivity:Hello"]) {
			t.Fatalf("trace %s does not hold the workflow and its activity: %v", tid, ns)
		}
	}

	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	want := map[[3]string]float64{
		{"temporal_workflow_runs_finished_total", "Greet", "completed"}: 1,
		{"temporal_workflow_runs_finished_total", "Greet", "failed"}:    1,
		{"temporal_activity_executions_total", "Hello", "completed"}:    1,
		{"temporal_activity_executions_total", "Hello", "failed"}:       1,
	}
	families, _ := reg.Gather()
	got := map[[3]string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[[3]string{f.GetName(), l["workflow_type"] + l["activity_type"], l["outcome"]}] = m.GetCounter().GetValue()
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%v = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
