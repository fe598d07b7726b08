package alertmail

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Register registers the workflows and activities on a worker of TaskQueue.
func Register(r worker.Registry, acts *Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers the workflows.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(AlertMailWorkflow)
	r.RegisterWorkflow(DigestClockWorkflow)
}

// Starter starts an alert mail's workflow.
type Starter interface {
	StartMail(ctx context.Context, in MailInput) error
}

// TemporalStarter is the Starter over a Temporal client.
type TemporalStarter struct{ Client client.Client }

// StartMail starts the mail once: a workflow of the same id that ran before
// (the relay retried after a lost answer) means the mail is on its way.
func (s TemporalStarter) StartMail(ctx context.Context, in MailInput) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    MailWorkflowID(in),
		TaskQueue:             TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, AlertMailWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s: %w", MailWorkflowID(in), err)
	}
	return nil
}

// EnsureClock starts the digest clock unless it runs (one per namespace).
func EnsureClock(ctx context.Context, c client.Client, in ClockInput) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       ClockWorkflowID,
		TaskQueue:                TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, DigestClockWorkflow, in)
	if err != nil {
		return fmt.Errorf("start the digest clock: %w", err)
	}
	return nil
}
