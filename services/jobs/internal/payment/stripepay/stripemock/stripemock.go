// Package stripemock runs stripe-mock, Stripe's own fake of its API, for the
// tests that talk to Stripe (make test installs the pinned one and sets
// STRIPE_MOCK).
package stripemock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Missing says why a test has no stripe-mock.
const Missing = "stripe-mock is not in $STRIPE_MOCK, on PATH or in $(go env GOPATH)/bin; install it with " +
	"`go install github.com/stripe/stripe-mock@latest` (make test installs the pinned one into ./bin)"

// Path is $STRIPE_MOCK, then stripe-mock on PATH, then where `go install`
// puts it; "" when there is none.
func Path() string {
	if p := os.Getenv("STRIPE_MOCK"); p != "" {
		return p
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
		p := filepath.Join(dir, "bin", "stripe-mock")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start runs bin on ports the system picks (on loopback, HTTPS too, so that
// parallel packages never collide) and reads its HTTP address from what it
// prints.
func Start(bin string) (url string, stop func(), err error) {
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:") //nolint:gosec // G204: the stripe-mock the Makefile pins
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			stop()
			return "", nil, errors.New("stripe-mock exited before listening")
		}
		return "http://" + a, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("stripe-mock did not listen within 30s")
	}
}

// Need starts a stripe-mock for t, stopped when t ends. Without one t is
// skipped, except in CI (CI set), where that fails it.
func Need(t testing.TB) string {
	t.Helper()
	bin := Path()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(Missing)
		}
		t.Skip(Missing)
	}
	u, stop, err := Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return u
}
