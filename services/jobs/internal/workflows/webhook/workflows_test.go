package webhook

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// An upgrade with legacy runs open (issue 45): a DeliveryWorkflow run
// whose first attempt had failed before the upgrade (a 500: its delivery
// pending, the run sleeping on its back-off) goes on under this worker,
// sends nothing and ends; the endpoint's pump then delivers each of the
// job's deliveries once, in their order.
func TestLegacyRunsDrainToThePump(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, 200)
	acts, ep, job := fixture(t, 7040, "Legacy Host", rcv.srv.URL)
	queue(t, ep, job, "l1", "l2", "l3")
	var first int64
	if err := pool.QueryRow(context.Background(), `SELECT min(id) FROM webhook_deliveries WHERE endpoint_id = $1 AND msg_id = 'l1'`, ep.ID).Scan(&first); err != nil {
		t.Fatal(err)
	}

	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(DeliveryWorkflow)
	env.RegisterActivity(acts)
	// The results recorded before the upgrade, then this worker's activities.
	nexts, attempts := 0, 0
	env.OnActivity("Next", mock.Anything, mock.Anything).Return(func(ctx context.Context, in Input) (Next, error) {
		if nexts++; nexts == 1 {
			return Next{DeliveryID: first, Found: true}, nil
		}
		return acts.Next(ctx, in)
	})
	env.OnActivity("Attempt", mock.Anything, mock.Anything).Return(func(ctx context.Context, in AttemptInput) (Outcome, error) {
		if attempts++; attempts == 1 {
			return Outcome{}, nil // the 500
		}
		return acts.Attempt(ctx, in)
	})
	env.ExecuteWorkflow(DeliveryWorkflow, Input{EndpointID: ep.ID, JobID: job})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("the legacy run: %v", env.GetWorkflowError())
	}
	if attempts != 2 || nexts != 2 {
		t.Fatalf("the legacy run made %d attempts and %d lookups, want 2 and 2", attempts, nexts)
	}
	if got := rcv.ids(); len(got) != 0 {
		t.Fatalf("the drained run sent %v", got)
	}
	pumpNow(t, acts, ep)
	if got := rcv.ids(); !slices.Equal(got, []string{"l1", "l2", "l3"}) {
		t.Fatalf("after the upgrade the receiver got %v, want l1 l2 l3 once each", got)
	}
}

func TestBackoff(t *testing.T) {
	if Backoff(0, 0) != MinBackoff/2 || Backoff(0, 0.999) >= MinBackoff || Backoff(30, 0.5) > MaxBackoff || Backoff(30, 0) < MaxBackoff/2 {
		t.Fatal("backoff out of its bounds")
	}
}
