// Package replaytest guards running workflows against code changes: a
// package records the histories of its workflows' real runs once (against a
// Temporal dev server, `go test ./pkg -run TestRecordHistories -record`) into
// testdata/histories, and its plain tests replay every recorded history
// against the current code with no server. A change that would make a running
// workflow take a different path (a new or removed activity or timer, a
// reordered call) fails the replay with a non-determinism error.
//
// Changing a workflow on purpose: gate the new path behind
// workflow.GetVersion, so that runs begun before the change still replay
// their old path; keep the old histories under new names (-record overwrites
// the files its scenarios name) while runs of the old code may be open, and
// record the new path. docs/reliability.md has the commands.
package replaytest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
)

// Dir is where a package keeps its recorded histories.
const Dir = "testdata/histories"

var record = flag.Bool("record", false, "record workflow histories against a Temporal dev server into "+Dir)

// Replay replays every history in Dir with the workflows register adds and
// the interceptors the workers run with. It fails when Dir holds no history,
// and when a registered workflow type has none: a new workflow needs
// recorded runs before it can be guarded.
func Replay(t *testing.T, register func(worker.WorkflowRegistry)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(Dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no recorded histories in %s: record them with go test . -run TestRecordHistories -record", Dir)
	}
	ics, err := temporalx.Interceptors(nil)
	if err != nil {
		t.Fatal(err)
	}
	wis := make([]interceptor.WorkerInterceptor, 0, len(ics))
	for _, ic := range ics {
		if wi, ok := ic.(interceptor.WorkerInterceptor); ok {
			wis = append(wis, wi)
		}
	}
	rp, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{Interceptors: wis})
	if err != nil {
		t.Fatal(err)
	}
	names := &names{WorkflowRegistry: rp}
	register(names)

	recorded := map[string]bool{}
	for _, f := range files {
		hist, err := load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		typ := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
		recorded[typ] = true
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			if err := rp.ReplayWorkflowHistory(nil, hist); err != nil {
				t.Fatalf("%s no longer replays (%s): %v\n"+
					"A running %s would fail the same way. Gate the change behind workflow.GetVersion; "+
					"see libs/temporalx/replaytest.", f, typ, err, typ)
			}
		})
	}
	for _, n := range names.list {
		if !recorded[n] {
			t.Errorf("workflow %s has no recorded history in %s", n, Dir)
		}
	}
}

func load(path string) (*historypb.History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h historypb.History
	if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &h); err != nil {
		return nil, err
	}
	if len(h.GetEvents()) == 0 || h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes() == nil {
		return nil, errors.New("not a workflow history: no WorkflowExecutionStarted event first")
	}
	return &h, nil
}

// names records the workflow types registered, named as the SDK names them.
type names struct {
	worker.WorkflowRegistry
	list []string
}

func (n *names) RegisterWorkflow(w any) {
	n.WorkflowRegistry.RegisterWorkflow(w)
	fn := runtime.FuncForPC(reflect.ValueOf(w).Pointer()).Name()
	n.list = append(n.list, strings.TrimSuffix(fn[strings.LastIndex(fn, ".")+1:], "-fm"))
}

func (n *names) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	n.WorkflowRegistry.RegisterWorkflowWithOptions(w, o)
	if o.Name != "" {
		n.list = append(n.list, o.Name)
	}
}

// Recorder runs workflows on a private Temporal dev server and writes their
// histories into Dir.
type Recorder struct {
	// Client reaches the dev server, with the interceptors the services'
	// clients use (so that workers built on it run as in production).
	Client client.Client
	t      *testing.T
}

// NewRecorder skips the test unless -record is given; otherwise it starts a
// dev server (see TemporalCLI) that stops with the test.
func NewRecorder(t *testing.T) *Recorder {
	t.Helper()
	if !*record {
		t.Skip("records histories only with -record: go test . -run TestRecordHistories -record")
	}
	cli, err := TemporalCLI()
	if err != nil {
		t.Fatal(err)
	}
	ics, err := temporalx.Interceptors(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: cli,
		ClientOptions: &client.Options{Interceptors: ics, Logger: tlog.NewStructuredLogger(
			slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))},
		LogLevel: "error",
		Stdout:   os.Stderr, Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatalf("start dev server with %s: %v", cli, err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("stop dev server: %v", err)
		}
	})
	if err := os.MkdirAll(Dir, 0o755); err != nil { //nolint:gosec // G301: test data, read by everyone
		t.Fatal(err)
	}
	return &Recorder{Client: srv.Client(), t: t}
}

// StartWorker starts a worker of r's dev server on taskQueue with what
// register(w, acts) adds (the function the service's worker registers
// with); it stops when the test ends.
func StartWorker[A any](r *Recorder, taskQueue string, register func(worker.Registry, A), acts A) {
	r.t.Helper()
	w := worker.New(r.Client, taskQueue, worker.Options{})
	register(w, acts)
	if err := w.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(w.Stop)
}

// Save waits for run to finish, checks that it ended as wantStatus, writes
// its history to Dir/name.json and returns its events.
func (r *Recorder) Save(name string, run client.WorkflowRun, wantStatus enumspb.WorkflowExecutionStatus) []*historypb.HistoryEvent {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = run.Get(ctx, nil) // the status below says how it ended
	d, err := r.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	if err != nil {
		r.t.Fatalf("%s: describe: %v", name, err)
	}
	if got := d.GetWorkflowExecutionInfo().GetStatus(); got != wantStatus {
		r.t.Fatalf("%s: ended %v, want %v", name, got, wantStatus)
	}
	it := r.Client.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			r.t.Fatalf("%s: history: %v", name, err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := (temporalproto.CustomJSONMarshalOptions{Indent: "  "}).Marshal(&h)
	if err != nil {
		r.t.Fatal(err)
	}
	path := filepath.Join(Dir, name+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil { //nolint:gosec // G306: test data
		r.t.Fatal(err)
	}
	r.t.Logf("recorded %s: %d events", path, len(h.Events))
	return h.Events
}

// Count is how many events of typ a history holds, for a recorder to check
// that a scenario took the path it is named after.
func Count(h []*historypb.HistoryEvent, typ enumspb.EventType) int {
	n := 0
	for _, e := range h {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// TemporalCLI is the path of the temporal CLI: $TEMPORAL_CLI, then
// <repo>/bin/temporal, then one on PATH; when there is none it runs
// scripts/temporal.sh, which installs the pinned version into <repo>/bin
// (a few minutes on a cold build cache), as tests/faults does.
func TemporalCLI() (string, error) {
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	out, err := exec.Command("go", "env", "GOWORK").Output()
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	if root == "." || strings.TrimSpace(string(out)) == "off" {
		return "", fmt.Errorf("no go.work found (go env GOWORK: %q)", out)
	}
	local := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	if out, err := exec.Command("bash", filepath.Join(root, "scripts", "temporal.sh")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/temporal.sh: %w\n%s", err, out)
	}
	return local, nil
}
