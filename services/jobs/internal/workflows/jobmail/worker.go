package jobmail

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// Register registers the workflow and its activity on a worker.
func Register(r worker.Registry, acts *Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers the workflow (the replay test's list).
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(JobMailWorkflow)
}

// Start starts the mail workflow once: a workflow of the same id that ran
// before (a relay retried after a lost answer) means the mail is on its way.
func Start(ctx context.Context, c client.Client, taskQueue string, in Input) error {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    WorkflowID(in),
		TaskQueue:             taskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, JobMailWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &started) {
		return fmt.Errorf("start %s: %w", WorkflowID(in), err)
	}
	return nil
}
