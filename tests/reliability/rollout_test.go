package reliability

import (
	"context"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// drainDelay is the rollout test's SHUTDOWN_DRAIN_DELAY: well above the
// balancer's readiness period (100 ms), as the chart's 5 s is above
// Kubernetes' endpoint propagation.
const drainDelay = time.Second

// A rolling restart of every API, one replica at a time (SIGTERM, wait for
// the process to end, start it again, wait for it to be ready), under
// constant mixed load through the gateway, from clients that keep their
// connections alive and clients that open one per request, loses nothing:
// every request is answered 2xx. Two replicas of each API run behind
// balancers that act as Kubernetes Services (tests/suite), so this is the
// path a Deployment's rollout takes: readiness fails first, the replica
// keeps serving through SHUTDOWN_DRAIN_DELAY with every answer closing its
// connection, then stops gracefully.
func TestRollingRestartUnderLoadLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ten processes")
	}
	db, err := pgtest.Create("rollout")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop() })
	ctx := context.Background()
	sys := suite.StartTest(t, suite.Options{Name: "rollout", DatabaseURL: db.URL, Keys: true, Replicas: 2,
		// Ten processes: small pools keep the machine's PostgreSQL (shared
		// with the other test packages) below its max_connections.
		Env: append([]string{"SHUTDOWN_DRAIN_DELAY=" + drainDelay.String(), "DB_MAX_CONNS=3"}, generous...)})
	gw := sys.URL["gateway"]
	k := sys.Keys[importerKey]
	if k == "" {
		t.Fatalf("no %q in %v", importerKey, sys.Keys)
	}

	load := &suite.Load{URL: gw, Key: k, Calls: suite.MixedCalls, Clients: 6, Pause: 5 * time.Millisecond}
	load.Start()

	// Every API, one replica at a time, as a Deployment's RollingUpdate
	// with maxUnavailable 0 does (the new pod is ready before the old stops;
	// here the other replica carries the load meanwhile).
	started := time.Now()
	restarts := 0
	for _, api := range []string{"gateway", "jobs", "directory", "content", "community"} {
		for _, r := range sys.Replicas(api) {
			if err := sys.Terminate(r); err != nil {
				t.Errorf("terminate %s: %v", r, err)
			}
			if err := sys.Start(ctx, r); err != nil {
				t.Fatalf("start %s again: %v", r, err)
			}
			restarts++
			time.Sleep(300 * time.Millisecond) // the balancer sees it ready
		}
	}
	time.Sleep(500 * time.Millisecond)
	load.Stop()
	t.Logf("%d restarts in %s under %d requests", restarts, time.Since(started).Round(time.Second), load.Total())
	if load.Total() < 200 {
		t.Fatalf("only %d requests: the load did not run", load.Total())
	}
	if fs := load.Failures(); len(fs) > 0 {
		t.Fatalf("%d of %d requests failed during the rollout, e.g.:\n%s", len(fs), load.Total(), suite.Summary(fs, 20))
	}
}
