package webhook

import (
	"context"
	"math/rand/v2"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

// Register registers the workflow and the activities (the worker on
// TaskQueue, and the tests).
func Register(r worker.Registry, acts *Activities) {
	r.RegisterWorkflow(EndpointWorkflow)
	// The earlier design's workflow, for its runs still open at an upgrade
	// (nothing starts new ones).
	r.RegisterWorkflow(DeliveryWorkflow)
	r.RegisterActivity(acts)
}

func randFloat() float64 { return rand.Float64() } //nolint:gosec // G404: jitter, not a secret

// Start hands a delivery to its (endpoint, job) workflow of the earlier
// design (tests of DeliveryWorkflow): signal-with-start, so a running
// one queues it and a missing one is started with it.
func Start(ctx context.Context, c client.Client, endpointID, jobID, deliveryID int64) error {
	return temporalx.SignalWithStart(ctx, c, WorkflowID(endpointID, jobID), TaskQueue, SignalDelivery, deliveryID,
		DeliveryWorkflow, Input{EndpointID: endpointID, JobID: jobID})
}
