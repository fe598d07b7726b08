package webhook

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// A job's deliveries go one after another: the second waits until the
// first succeeded, however many retries that took; the waits grow; a
// repeated signal is dropped.
func TestDeliveryWorkflowKeepsOrderAndRetries(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DeliveryWorkflow)
	env.RegisterActivity(&Activities{})
	var calls []int64
	var at []time.Time
	env.OnActivity("Attempt", mock.Anything, mock.Anything).Return(func(_ context.Context, in AttemptInput) (Outcome, error) {
		calls = append(calls, in.DeliveryID)
		at = append(at, env.Now())
		n := 0
		for _, c := range calls {
			if c == in.DeliveryID {
				n++
			}
		}
		return Outcome{Done: in.DeliveryID != 1 || n == 3}, nil // 1 fails twice
	})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalDelivery, int64(2))
		env.SignalWorkflow(SignalDelivery, int64(1)) // a repeat of the first
	}, time.Second)
	env.ExecuteWorkflow(DeliveryWorkflow, Input{EndpointID: 3, JobID: 4, Queue: []int64{1}})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if len(calls) != 4 || calls[0] != 1 || calls[1] != 1 || calls[2] != 1 || calls[3] != 2 {
		t.Fatalf("attempts %v, want 1 1 1 2", calls)
	}
	if d1, d2 := at[1].Sub(at[0]), at[2].Sub(at[1]); d1 < MinBackoff/2 || d2 <= d1/2 || d2 > 2*MinBackoff {
		t.Fatalf("waits %v then %v", d1, d2)
	}
}

// A delivery that keeps failing is retried for RetryFor, the last attempt
// told it is the last.
func TestDeliveryWorkflowGivesUpAfterRetryFor(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DeliveryWorkflow)
	env.RegisterActivity(&Activities{})
	var first, last time.Time
	n := 0
	env.OnActivity("Attempt", mock.Anything, mock.Anything).Return(func(_ context.Context, in AttemptInput) (Outcome, error) {
		if n == 0 {
			first = env.Now()
		}
		n++
		if in.NextIn == 0 {
			last = env.Now()
		}
		return Outcome{}, nil
	})
	env.ExecuteWorkflow(DeliveryWorkflow, Input{EndpointID: 3, JobID: 5, Queue: []int64{9}})
	if env.GetWorkflowError() != nil || last.IsZero() {
		t.Fatalf("workflow: %v, last attempt %v", env.GetWorkflowError(), last)
	}
	if span := last.Sub(first); span < 24*time.Hour || span > RetryFor {
		t.Fatalf("retried over %v (%d attempts)", span, n)
	}
}

func TestBackoff(t *testing.T) {
	if Backoff(0, 0) != MinBackoff/2 || Backoff(0, 0.999) >= MinBackoff || Backoff(30, 0.5) > MaxBackoff || Backoff(30, 0) < MaxBackoff/2 {
		t.Fatal("backoff out of its bounds")
	}
}
