package importsync

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

// Register registers the workflow and the activities (the worker on
// TaskQueue, and the tests).
func Register(r worker.Registry, acts *Activities) {
	r.RegisterWorkflow(SourceWorkflow)
	r.RegisterActivity(acts)
}

// Wake signals a source's workflow, starting it when none runs.
func Wake(ctx context.Context, c temporalx.SignalStarter, sourceID int64) error {
	return temporalx.SignalWithStart(ctx, c, SourceWorkflowID(sourceID), TaskQueue, SignalWake, sourceID,
		SourceWorkflow, SourceInput{SourceID: sourceID})
}

// Relay hands the API's wake-ups (import_wakes) to Temporal.
func Relay(c client.Client, table outbox.Table[int64], r outbox.Relay[int64]) *outbox.Relay[int64] {
	r.Table = table
	r.Deliver = func(ctx context.Context, m outbox.Message[int64]) error { return Wake(ctx, c, m.Payload) }
	return &r
}

// EnsureAll wakes every source's workflow (ids), so that each runs: the
// worker's start, after which the wake-ups keep them.
func EnsureAll(ctx context.Context, c temporalx.SignalStarter, ids []int64, log *slog.Logger) error {
	for _, id := range ids {
		if err := Wake(ctx, c, id); err != nil {
			return err
		}
	}
	if len(ids) > 0 {
		log.Info("import sources' workflows running", "sources", len(ids))
	}
	return nil
}
