package suite_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "suite", &dbURL, nil)) }

// A killed process is gone (its port refuses), and Start brings it back on
// the same address: what the fault tests rely on.
func TestKillAndRestartOnTheSameAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the services")
	}
	ctx := context.Background()
	s, err := suite.Start(ctx, suite.Options{Name: "suitetest", DatabaseURL: dbURL, Services: []string{"directory"}, Seeds: [][]string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ready := func() error {
		resp, err := http.Get(s.URL["directory"] + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	first := s.PID("directory")
	if first == 0 || ready() != nil {
		t.Fatalf("directory not running (pid %d): %v", first, ready())
	}
	if err := s.Kill("directory"); err != nil {
		t.Fatal(err)
	}
	if s.PID("directory") != 0 || ready() == nil {
		t.Fatal("directory still answers after SIGKILL")
	}
	if err := s.Start(ctx, "directory"); err != nil {
		t.Fatal(err)
	}
	if s.PID("directory") == first || ready() != nil {
		t.Fatalf("directory not back on %s", s.URL["directory"])
	}
	if err := s.Start(ctx, "directory"); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second Start of a running process: %v", err)
	}
}
