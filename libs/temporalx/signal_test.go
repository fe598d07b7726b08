package temporalx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

type signalStarter struct {
	err  error
	id   string
	opts client.StartWorkflowOptions
	args []any
}

func (s *signalStarter) SignalWithStartWorkflow(_ context.Context, id, _ string, _ any, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	s.id, s.opts, s.args = id, o, args
	return nil, s.err
}

// The start carries the workflow id, the task queue and a reuse policy that
// lets an id whose run ended start again; a failure names the workflow.
func TestSignalWithStart(t *testing.T) {
	s := &signalStarter{}
	if err := temporalx.SignalWithStart(context.Background(), s, "wf-1", "queue", "sig", 1, Greet, "ada"); err != nil {
		t.Fatal(err)
	}
	if s.id != "wf-1" || s.opts.ID != "wf-1" || s.opts.TaskQueue != "queue" || len(s.args) != 1 ||
		s.opts.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE {
		t.Fatalf("id %q options %+v args %v", s.id, s.opts, s.args)
	}
	s.err = errors.New("unavailable")
	err := temporalx.SignalWithStart(context.Background(), s, "wf-2", "queue", "sig", 1, Greet)
	if !errors.Is(err, s.err) || !strings.Contains(err.Error(), "wf-2") {
		t.Fatalf("error %v", err)
	}
}
