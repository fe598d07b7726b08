package jobexpiry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env, _ := newEnvWithMails(t)
	return env
}

// sentMail is a poster mail the workflow started, and when.
type sentMail struct {
	in jobmail.Input
	at time.Time
}

// newEnvWithMails records the poster mails the workflow starts (the mail
// workflow itself is tested in jobmail).
func newEnvWithMails(t *testing.T) (*testsuite.TestWorkflowEnvironment, *[]sentMail) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(t0)
	env.RegisterWorkflow(JobExpiryWorkflow)
	env.RegisterWorkflow(SweepWorkflow)
	env.RegisterWorkflow(jobmail.JobMailWorkflow)
	env.RegisterActivity(&Activities{})
	var mails []sentMail
	env.OnWorkflow(jobmail.JobMailWorkflow, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in jobmail.Input) (string, error) {
			mails = append(mails, sentMail{in, env.Now()})
			return jobmail.ResultSent, nil
		})
	return env, &mails
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

// The poster is reminded RemindBefore the date and told once it expired;
// a date moved by a signal gets a reminder of its own.
func TestJobExpiryWorkflowMailsThePoster(t *testing.T) {
	env, mails := newEnvWithMails(t)
	first := t0.Add(30 * 24 * time.Hour)
	later := t0.Add(60 * 24 * time.Hour)
	env.OnActivity("ExpireJob", mock.Anything, int64(12)).Return(ExpireResult{Expired: true, Status: "expired"}, nil).Once()
	// After the first reminder the poster pays for more time.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalReschedule, later) }, 28*24*time.Hour)
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 12, ExpiresAt: first, RemindBefore: 3 * 24 * time.Hour})
	if env.GetWorkflowError() != nil {
		t.Fatal(env.GetWorkflowError())
	}
	want := []sentMail{
		{jobmail.Input{JobID: 12, Kind: jobmail.KindReminder, ExpiresAt: first}, first.Add(-3 * 24 * time.Hour)},
		{jobmail.Input{JobID: 12, Kind: jobmail.KindReminder, ExpiresAt: later}, later.Add(-3 * 24 * time.Hour)},
		{jobmail.Input{JobID: 12, Kind: jobmail.KindExpired, ExpiresAt: later}, later},
	}
	if len(*mails) != len(want) {
		t.Fatalf("mails %+v", *mails)
	}
	for i, m := range *mails {
		if m.in != want[i].in || m.at.Before(want[i].at) || m.at.After(want[i].at.Add(time.Minute)) {
			t.Errorf("mail %d: %+v at %v, want %+v at %v", i, m.in, m.at, want[i].in, want[i].at)
		}
	}
}

// No reminder without RemindBefore (runs started before the mails), and no
// expiry mail for a job that was not expired by the timer.
func TestJobExpiryWorkflowMailsOnlyWhatHappened(t *testing.T) {
	env, mails := newEnvWithMails(t)
	env.OnActivity("ExpireJob", mock.Anything, int64(13)).Return(ExpireResult{Status: "paused"}, nil).Once()
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 13, ExpiresAt: t0.Add(24 * time.Hour)})
	if env.GetWorkflowError() != nil || len(*mails) != 0 {
		t.Fatalf("error %v mails %+v", env.GetWorkflowError(), *mails)
	}
	// A date inside the reminder window: the reminder goes at once.
	env, mails = newEnvWithMails(t)
	env.OnActivity("ExpireJob", mock.Anything, int64(14)).Return(ExpireResult{Expired: true, Status: "expired"}, nil).Once()
	env.ExecuteWorkflow(JobExpiryWorkflow, Input{JobID: 14, ExpiresAt: t0.Add(24 * time.Hour), RemindBefore: 72 * time.Hour})
	if env.GetWorkflowError() != nil || len(*mails) != 2 || (*mails)[0].in.Kind != jobmail.KindReminder ||
		!(*mails)[0].at.Equal(t0) || (*mails)[1].in.Kind != jobmail.KindExpired {
		t.Fatalf("error %v mails %+v", env.GetWorkflowError(), *mails)
	}
}
