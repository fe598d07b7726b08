// Package temporalx holds what every Temporal client and worker of the suite
// shares: the OpenTelemetry tracing interceptor (trace context flows from the
// code that starts or signals a workflow into the workflow and its
// activities) and Prometheus counters of workflow and activity outcomes.
package temporalx

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Interceptors returns the client interceptors to set on client.Options:
// tracing, and, when reg is not nil, the outcome counters registered on reg.
// Both also apply to every worker built on that client.
func Interceptors(reg prometheus.Registerer) ([]interceptor.ClientInterceptor, error) {
	tracing, err := opentelemetry.NewTracingInterceptor(opentelemetry.TracerOptions{})
	if err != nil {
		return nil, err
	}
	out := []interceptor.ClientInterceptor{tracing}
	if reg != nil {
		m := NewMetrics()
		if err := m.Register(reg); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Metrics counts finished workflow runs and activity executions by type and
// outcome. It is a worker interceptor (and a no-op client interceptor, so it
// can ride on client.Options).
type Metrics struct {
	interceptor.ClientInterceptorBase
	interceptor.WorkerInterceptorBase
	workflows  *prometheus.CounterVec
	activities *prometheus.CounterVec
}

// NewMetrics builds the counters.
func NewMetrics() *Metrics {
	return &Metrics{
		workflows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "temporal_workflow_runs_finished_total",
			Help: "Workflow runs this worker finished, by workflow type and outcome (completed, failed, canceled, continued_as_new).",
		}, []string{"workflow_type", "outcome"}),
		activities: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "temporal_activity_executions_total",
			Help: "Activity attempts this worker ran, by activity type and outcome (completed, failed, canceled).",
		}, []string{"activity_type", "outcome"}),
	}
}

// Register adds the counters to reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return errors.Join(reg.Register(m.workflows), reg.Register(m.activities))
}

// InterceptWorkflow implements interceptor.WorkerInterceptor.
func (m *Metrics) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowIn{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, m: m}
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (m *Metrics) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityIn{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, m: m}
}

type workflowIn struct {
	interceptor.WorkflowInboundInterceptorBase
	m *Metrics
}

func (w *workflowIn) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	// A replay re-runs code that already finished once: count only the run
	// that really finishes.
	if !workflow.IsReplaying(ctx) {
		w.m.workflows.WithLabelValues(workflow.GetInfo(ctx).WorkflowType.Name, outcome(err)).Inc()
	}
	return res, err
}

type activityIn struct {
	interceptor.ActivityInboundInterceptorBase
	m *Metrics
}

func (a *activityIn) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	a.m.activities.WithLabelValues(activity.GetInfo(ctx).ActivityType.Name, outcome(err)).Inc()
	return res, err
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "completed"
	case workflow.IsContinueAsNewError(err):
		return "continued_as_new"
	case temporal.IsCanceledError(err), errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "failed"
}

// Check is a worker's readiness check: the Temporal frontend answers its
// health check. A worker that cannot reach Temporal polls nothing, so it
// must not count as ready (a rollout waits for it; an alert sees it).
func Check(c client.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	}
}
