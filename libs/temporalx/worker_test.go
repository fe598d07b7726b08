package temporalx_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/coworkjobs/coworkjobs/libs/temporalx"
	"github.com/coworkjobs/coworkjobs/libs/temporalx/replaytest"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.b.Bytes(), []byte(s))
}

// A worker started before Temporal retries, is not ready, and polls once
// Temporal comes up on its address: the order make run starts them in.
func TestWorkerWaitsForTemporal(t *testing.T) {
	cli, err := replaytest.TemporalCLI()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	c, err := client.NewLazyClient(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var logs logBuf
	w := &temporalx.Worker{
		Client: c, TaskQueue: "waits-for-temporal", Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Register:   func(r worker.Registry) { r.RegisterWorkflow(Greet); r.RegisterActivity(Hello) },
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	waitFor(t, 30*time.Second, "two failed starts logged", func() bool { return logs.count("retrying") >= 2 })
	if w.Ready() == nil {
		t.Fatal("ready while Temporal is unreachable")
	}

	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer scancel()
	srv, err := testsuite.StartDevServer(sctx, testsuite.DevServerOptions{
		ExistingPath: cli, ClientOptions: &client.Options{HostPort: addr}, LogLevel: "error",
		Stdout: os.Stderr, Stderr: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()

	waitFor(t, time.Minute, "worker ready", func() bool { return w.Ready() == nil })
	run, err := srv.Client().ExecuteWorkflow(sctx, client.StartWorkflowOptions{TaskQueue: "waits-for-temporal"}, Greet, "ada")
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := run.Get(sctx, &out); err != nil || out != "hello ada" {
		t.Fatalf("workflow on the late worker: %q %v", out, err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Ready() == nil {
		t.Fatal("ready after Run returned")
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
	}
}
