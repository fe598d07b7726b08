package importsync

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
)

// A source's workflow polls it when due, sleeps until its next poll, and
// ends when the poll finds it gone (deleted).
func TestSourceWorkflowPollsOnItsIntervalUntilGone(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SourceWorkflow)
	env.RegisterActivity(&Activities{})
	start := env.Now()
	var at []time.Duration
	env.OnActivity("Poll", mock.Anything, mock.Anything).Return(func(ctx context.Context, in SourceInput) (Polled, error) {
		at = append(at, env.Now().Sub(start).Round(time.Minute))
		if len(at) == 3 {
			return Polled{Gone: true}, nil
		}
		return Polled{NextPoll: env.Now().Add(15 * time.Minute)}, nil
	})
	env.ExecuteWorkflow(SourceWorkflow, SourceInput{SourceID: 7})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("the workflow: %v", env.GetWorkflowError())
	}
	if len(at) != 3 || at[0] != 0 || at[1] != 15*time.Minute || at[2] != 30*time.Minute {
		t.Fatalf("polled at %v, want 0, 15m, 30m", at)
	}
}

// A wake-up (a sync) polls at once rather than at the next interval; a
// failed poll (our own failure) is tried again after retryAfter.
func TestSourceWorkflowWakesOnSignalAndRetriesFailures(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(SourceWorkflow)
	env.RegisterActivity(&Activities{})
	start := env.Now()
	var at []time.Duration
	env.OnActivity("Poll", mock.Anything, mock.Anything).Return(func(ctx context.Context, in SourceInput) (Polled, error) {
		at = append(at, env.Now().Sub(start).Round(time.Minute))
		switch len(at) {
		case 1:
			return Polled{NextPoll: env.Now().Add(time.Hour)}, nil
		case 2:
			return Polled{}, context.DeadlineExceeded // retried by the policy, then by the workflow
		case 3, 4, 5, 6:
			return Polled{}, context.DeadlineExceeded
		case 7:
			return Polled{NextPoll: env.Now().Add(time.Hour)}, nil
		}
		return Polled{Gone: true}, nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalWake, int64(7)) }, 5*time.Minute)
	env.ExecuteWorkflow(SourceWorkflow, SourceInput{SourceID: 7})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("the workflow: %v", env.GetWorkflowError())
	}
	if len(at) < 3 || at[1] != 5*time.Minute {
		t.Fatalf("polled at %v: want the second poll at the wake-up (5m), not at the interval (1h)", at)
	}
}
