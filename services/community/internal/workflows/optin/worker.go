package optin

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// RunWorker polls TaskQueue with the workflow and activities until ctx ends.
func RunWorker(ctx context.Context, c client.Client, acts *Activities) error {
	w := worker.New(c, TaskQueue, worker.Options{})
	w.RegisterWorkflow(OptIn)
	w.RegisterActivity(acts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	<-ctx.Done()
	w.Stop()
	return nil
}
