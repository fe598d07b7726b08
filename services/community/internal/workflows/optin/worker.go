package optin

import "go.temporal.io/sdk/worker"

// Register registers the workflow and activities: the worker on TaskQueue
// (temporalx.NewWorker) and the tests.
func Register(r worker.Registry, acts *Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers the workflows: the worker's list, which the
// replay test replays recorded histories against.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflow(OptIn)
}
