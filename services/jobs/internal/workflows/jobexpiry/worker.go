package jobexpiry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// RunWorker runs the expiry worker on TaskQueue until ctx ends. While
// Temporal is unreachable it retries the start every few seconds, so the
// command can start before Temporal does.
func RunWorker(ctx context.Context, c client.Client, acts *Activities, log *slog.Logger) error {
	for {
		w := worker.New(c, TaskQueue, worker.Options{})
		Register(w, acts)
		err := w.Start()
		if err == nil {
			log.Info("temporal worker started", "task_queue", TaskQueue)
			<-ctx.Done()
			w.Stop()
			return nil
		}
		log.Warn("start temporal worker; retrying", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

// Register registers the workflows and activities (the worker and the tests).
func Register(r worker.Registry, acts *Activities) {
	r.RegisterWorkflow(JobExpiryWorkflow)
	r.RegisterWorkflow(SweepWorkflow)
	r.RegisterActivity(acts)
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

// Starter starts or signals a job's expiry workflow.
type Starter interface {
	Schedule(ctx context.Context, jobID int64, expiresAt time.Time) error
}

// TemporalStarter is the Starter over a Temporal client: signal-with-start,
// so a running workflow moves its timer and a missing one is started.
type TemporalStarter struct{ Client client.Client }

// Schedule implements Starter.
func (s TemporalStarter) Schedule(ctx context.Context, jobID int64, expiresAt time.Time) error {
	_, err := s.Client.SignalWithStartWorkflow(ctx, JobExpiryWorkflowID(jobID), SignalReschedule, expiresAt,
		client.StartWorkflowOptions{
			ID:                    JobExpiryWorkflowID(jobID),
			TaskQueue:             TaskQueue,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		}, JobExpiryWorkflow, Input{JobID: jobID, ExpiresAt: expiresAt})
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", JobExpiryWorkflowID(jobID), err)
	}
	return nil
}
