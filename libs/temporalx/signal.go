package temporalx

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// SignalStarter is the part of a client SignalWithStart uses (tests stand in
// for it).
type SignalStarter interface {
	SignalWithStartWorkflow(ctx context.Context, workflowID string, signalName string, signalArg any,
		options client.StartWorkflowOptions, workflow any, workflowArgs ...any) (client.WorkflowRun, error)
}

// SignalWithStart signals workflow id, first starting it on taskQueue with
// args when no run of it is open (an id whose run has ended starts again).
// It is how the outbox relays reach a workflow: one call moves a running
// workflow or starts a missing one, and a row delivered twice only signals
// twice.
func SignalWithStart(ctx context.Context, c SignalStarter, id, taskQueue, signal string, arg, workflow any, args ...any) error {
	_, err := c.SignalWithStartWorkflow(ctx, id, signal, arg, client.StartWorkflowOptions{
		ID: id, TaskQueue: taskQueue, WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, workflow, args...)
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", id, err)
	}
	return nil
}
