package jobexpiry

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// Register registers the workflows and activities: the worker on TaskQueue
// (temporalx.NewWorker) and the tests; the poster's mails run on the same
// task queue.
func Register(r worker.Registry, acts *Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
	if acts.Mail != nil {
		r.RegisterActivity(acts.Mail)
	}
}

// RegisterWorkflows registers the workflows: the worker's list, which the
// replay test replays recorded histories against.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(JobExpiryWorkflow)
	r.RegisterWorkflow(SweepWorkflow)
	jobmail.RegisterWorkflows(r)
}

// EnsureSweepSchedule creates the schedule that runs SweepWorkflow every
// interval; an existing schedule is left as it is.
func EnsureSweepSchedule(ctx context.Context, c client.Client, every time.Duration) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:      SweepScheduleID,
		Spec:    client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}},
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Action: &client.ScheduleWorkflowAction{
			ID:        SweepWorkflowID,
			Workflow:  SweepWorkflow,
			TaskQueue: TaskQueue,
		},
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create sweep schedule: %w", err)
	}
	return nil
}

// Starter starts or signals a job's expiry workflow, and starts the
// poster's mails.
type Starter interface {
	Schedule(ctx context.Context, jobID int64, expiresAt time.Time) error
	Mail(ctx context.Context, in jobmail.Input) error
}

// TemporalStarter is the Starter over a Temporal client: signal-with-start,
// so a running workflow moves its timer and a missing one is started.
type TemporalStarter struct {
	Client client.Client
	// RemindBefore is when, before the expiry, the poster is reminded.
	RemindBefore time.Duration
}

// Mail implements Starter.
func (s TemporalStarter) Mail(ctx context.Context, in jobmail.Input) error {
	return jobmail.Start(ctx, s.Client, TaskQueue, in)
}

// Schedule implements Starter.
func (s TemporalStarter) Schedule(ctx context.Context, jobID int64, expiresAt time.Time) error {
	return temporalx.SignalWithStart(ctx, s.Client, JobExpiryWorkflowID(jobID), TaskQueue, SignalReschedule, expiresAt,
		JobExpiryWorkflow, Input{JobID: jobID, ExpiresAt: expiresAt, RemindBefore: s.RemindBefore})
}
