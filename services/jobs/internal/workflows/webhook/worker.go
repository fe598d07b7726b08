package webhook

import (
	"math/rand/v2"

	"go.temporal.io/sdk/worker"
)

// Register registers the workflow and the activities (the worker on
// TaskQueue, and the tests).
func Register(r worker.Registry, acts *Activities) {
	r.RegisterWorkflow(EndpointWorkflow)
	// The earlier design's, draining its runs still open at an upgrade
	// (legacy.go).
	r.RegisterWorkflow(DeliveryWorkflow)
	r.RegisterActivity(acts)
}

func randFloat() float64 { return rand.Float64() } //nolint:gosec // G404: jitter, not a secret
