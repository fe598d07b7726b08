package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

// Main is the TestMain of a package whose tests share one running system.
// With -short it runs nothing: building and starting the system takes a
// while. Otherwise it starts the system as o says on a throwaway database
// (o.DatabaseURL), hands it to setup (nil: nothing more to prepare), runs the
// tests and writes the processes' logs to stderr when one failed; then it
// stops the system, removes the built commands and drops the database.
func Main(m *testing.M, o Options, setup func(*Suite) error) int {
	var dbURL string
	return MainDB(m, o.Name, &dbURL, func() int {
		o.DatabaseURL = dbURL
		sys, err := Start(context.Background(), o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: start: %v\n", o.Name, err)
			return 1
		}
		code := 1
		defer func() { sys.finish(code != 0) }()
		if setup != nil {
			if err := setup(sys); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
				return code
			}
		}
		code = m.Run()
		return code
	})
}

// StartTest is Start for test t: a system that does not start ends t, and
// when t ends the system stops, its processes' logs written to stderr first
// if t failed.
func StartTest(t testing.TB, o Options) *Suite {
	t.Helper()
	sys, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { sys.finish(t.Failed()) })
	return sys
}

// finish stops the system. After a failure its processes' logs go to stderr
// and stay in LogDir; otherwise LogDir is removed.
func (s *Suite) finish(failed bool) {
	if failed {
		s.DumpLogs(os.Stderr)
	}
	s.Stop()
	if !failed {
		_ = os.RemoveAll(s.LogDir)
	}
}

// MainDB is the TestMain of a package whose tests start systems of their
// own: with -short it runs nothing; otherwise it creates a throwaway database
// named after prefix, sets *dbURL to it and calls run (nil: m.Run), then
// removes the built commands and drops the database.
func MainDB(m *testing.M, prefix string, dbURL *string, run func() int) int {
	flag.Parse() // testing.Short reads the flags, which m.Run has not parsed yet
	if testing.Short() {
		return 0
	}
	if run == nil {
		run = m.Run
	}
	return pgtest.Main(prefix, func() int {
		defer Cleanup()
		return run()
	}, func(u string) { *dbURL = u })
}
