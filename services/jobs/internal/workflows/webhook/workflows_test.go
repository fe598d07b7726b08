package webhook

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// fakeQueue stands for the pending deliveries of one (endpoint, job):
// Next gives the oldest, and an Attempt that is done takes it off.
type fakeQueue struct{ pending []int64 }

func (q *fakeQueue) next(context.Context, Input) (Next, error) {
	if len(q.pending) == 0 {
		return Next{}, nil
	}
	return Next{DeliveryID: q.pending[0], Found: true}, nil
}

func (q *fakeQueue) done(id int64) {
	for i, p := range q.pending {
		if p == id {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			return
		}
	}
}

// A job's deliveries go one after another, oldest first: the second waits
// until the first succeeded, however many retries that took; the waits
// grow; a delivery queued while the run waits wakes it; signals carry no
// order (a late or repeated one changes nothing).
func TestDeliveryWorkflowKeepsOrderAndRetries(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DeliveryWorkflow)
	env.RegisterActivity(&Activities{})
	q := &fakeQueue{pending: []int64{1}}
	env.OnActivity("Next", mock.Anything, mock.Anything).Return(q.next)
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
		done := in.DeliveryID != 1 || n == 3 // 1 fails twice
		if done {
			q.done(in.DeliveryID)
		}
		return Outcome{Done: done}, nil
	})
	env.RegisterDelayedCallback(func() {
		q.pending = append(q.pending, 2)
		env.SignalWorkflow(SignalDelivery, int64(2))
		env.SignalWorkflow(SignalDelivery, int64(1)) // late and repeated
	}, time.Second)
	env.RegisterDelayedCallback(func() { // while the run waits for more
		q.pending = append(q.pending, 3)
		env.SignalWorkflow(SignalDelivery, int64(3))
	}, 40*time.Second)
	env.ExecuteWorkflow(DeliveryWorkflow, Input{EndpointID: 3, JobID: 4})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("workflow: %v", env.GetWorkflowError())
	}
	if want := []int64{1, 1, 1, 2, 3}; !slices.Equal(calls, want) {
		t.Fatalf("attempts %v, want %v", calls, want)
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
	q := &fakeQueue{pending: []int64{9}}
	env.OnActivity("Next", mock.Anything, mock.Anything).Return(q.next)
	var first, last time.Time
	n := 0
	env.OnActivity("Attempt", mock.Anything, mock.Anything).Return(func(_ context.Context, in AttemptInput) (Outcome, error) {
		if n == 0 {
			first = env.Now()
		}
		n++
		if in.NextIn == 0 {
			last = env.Now()
			q.done(in.DeliveryID) // recorded as failed
		}
		return Outcome{}, nil
	})
	env.ExecuteWorkflow(DeliveryWorkflow, Input{EndpointID: 3, JobID: 5})
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
