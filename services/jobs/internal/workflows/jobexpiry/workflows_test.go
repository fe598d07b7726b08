package jobexpiry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.RegisterWorkflow(JobExpiryWorkflow)
	env.RegisterWorkflow(SweepWorkflow)
	env.RegisterActivity(&Activities{})
	return env
}

func TestJobExpiryWorkflowExpiresAtTheDate(t *testing.T) {
	env := newEnv(t)
	var calledAt time.Time
	env.OnActivity("ExpireJob", mock.Anything, int64(7)).Return(func(ctx context.Context, id int64) (ExpireResult, error) {
		calledAt = env.Now()
		return ExpireResult{Expired: true, Status: "expired"}, nil
	})
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 7, ExpiresAt: t0.Add(30 * 24 * time.Hour)})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if calledAt.Before(t0.Add(30 * 24 * time.Hour)) {
		t.Fatalf("expired early at %v", calledAt)
	}
	env.AssertExpectations(t)
}

func TestJobExpiryWorkflowSignalMovesTheTimer(t *testing.T) {
	env := newEnv(t)
	later := t0.Add(60 * 24 * time.Hour)
	var calledAt time.Time
	env.OnActivity("ExpireJob", mock.Anything, int64(8)).Return(func(ctx context.Context, id int64) (ExpireResult, error) {
		calledAt = env.Now()
		return ExpireResult{Expired: true, Status: "expired"}, nil
	}).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalReschedule, later)
	}, 24*time.Hour)
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 8, ExpiresAt: t0.Add(30 * 24 * time.Hour)})
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if calledAt.Before(later) {
		t.Fatalf("expired at %v, before the moved date %v", calledAt, later)
	}
	env.AssertExpectations(t)
}

func TestJobExpiryWorkflowSignalCanBringTheDateForward(t *testing.T) {
	env := newEnv(t)
	sooner := t0.Add(2 * 24 * time.Hour)
	var calledAt time.Time
	env.OnActivity("ExpireJob", mock.Anything, int64(9)).Return(func(ctx context.Context, id int64) (ExpireResult, error) {
		calledAt = env.Now()
		return ExpireResult{Expired: true, Status: "expired"}, nil
	}).Once()
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReschedule, sooner) }, time.Hour)
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 9, ExpiresAt: t0.Add(30 * 24 * time.Hour)})
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	if calledAt.Before(sooner) || calledAt.After(t0.Add(3*24*time.Hour)) {
		t.Fatalf("expired at %v, want shortly after %v", calledAt, sooner)
	}
}

func TestJobExpiryWorkflowWaitsAgainWhenTheDateMovedInTheStore(t *testing.T) {
	env := newEnv(t)
	moved := t0.Add(10 * 24 * time.Hour)
	calls := 0
	env.OnActivity("ExpireJob", mock.Anything, int64(10)).Return(func(ctx context.Context, id int64) (ExpireResult, error) {
		calls++
		if calls == 1 {
			return ExpireResult{Status: "active", NotDueUntil: &moved}, nil
		}
		if env.Now().Before(moved) {
			t.Errorf("second call at %v before %v", env.Now(), moved)
		}
		return ExpireResult{Expired: true, Status: "expired"}, nil
	})
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 10, ExpiresAt: t0.Add(24 * time.Hour)})
	if env.GetWorkflowError() != nil || calls != 2 {
		t.Fatalf("error %v calls %d", env.GetWorkflowError(), calls)
	}
}

func TestJobExpiryWorkflowPastDateExpiresAtOnce(t *testing.T) {
	env := newEnv(t)
	env.OnActivity("ExpireJob", mock.Anything, int64(11)).Return(ExpireResult{Expired: true, Status: "expired"}, nil).Once()
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 11, ExpiresAt: t0.Add(-time.Hour)})
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	env.AssertExpectations(t)
}

func TestSweepWorkflow(t *testing.T) {
	env := newEnv(t)
	env.OnActivity("SweepOverdue", mock.Anything).Return(3, nil).Once()
	env.ExecuteWorkflow(SweepWorkflow)
	var n int
	if err := env.GetWorkflowResult(&n); err != nil || n != 3 {
		t.Fatalf("n %d err %v", n, err)
	}
}

func TestJobExpiryWorkflowID(t *testing.T) {
	if JobExpiryWorkflowID(42) != "job-expiry-42" {
		t.Fatal(JobExpiryWorkflowID(42))
	}
}
