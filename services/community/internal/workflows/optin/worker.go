package optin

import (
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

// NewWorker is the opt-in worker on TaskQueue. Its Run retries with back-off
// while Temporal is unreachable, so the command can start before Temporal does.
func NewWorker(c client.Client, acts *Activities, log *slog.Logger) *temporalx.Worker {
	return temporalx.NewWorker(c, TaskQueue, Register, acts, log)
}

// Register registers the workflow and activities (the worker and the tests).
func Register(r worker.Registry, acts *Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers the workflows: the worker's list, which the
// replay test replays recorded histories against.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(OptIn)
}
