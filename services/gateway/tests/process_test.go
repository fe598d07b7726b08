package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// gatewayBinary builds cmd/gateway once for the package.
func gatewayBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gateway-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gateway")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/coworkjobs/coworkjobs/services/gateway/cmd/gateway").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build gateway: %v", buildErr)
	}
	return binPath
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

type process struct {
	cmd  *exec.Cmd
	base string
	done chan error
}

// startProcess runs the real gateway binary against the test database, the
// Redis at redis (a REDIS_URL) and backend.
func startProcess(t *testing.T, backend, redis, prefix string) *process {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(gatewayBinary(t))
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "REDIS_URL="+redis, "REDIS_KEY_PREFIX="+prefix,
		"INTERNAL_IDENTITY_SECRET="+secret, "HTTP_ADDR=127.0.0.1:"+port, "ADMIN_ADDR=off",
		"JOBS_URL="+backend, "DIRECTORY_URL="+backend, "CONTENT_URL="+backend, "COMMUNITY_URL="+backend,
		"LOG_LEVEL=warn", "ACCESS_LOG=false", "SHUTDOWN_TIMEOUT=5s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, base: "http://127.0.0.1:" + port, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if err := <-p.done; err != nil {
			t.Logf("gateway process %s: %v", p.base, err) // "signal: killed" unless it had stopped already
		}
	})
	for range 100 {
		if resp, err := client.Get(p.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("gateway process did not become ready")
	return nil
}

// Two gateway processes on one Redis spend one budget: exactly 120 writes
// pass between them.
func TestTwoGatewayProcessesShareOneBudget(t *testing.T) { twoProcessesShareOneBudget(t, redisURL) }

// twoProcessesShareOneBudget runs two gateway binaries on the Redis at url.
func twoProcessesShareOneBudget(t *testing.T, url string) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	backend := startBackend(t, "echo")
	prefix := "test:" + randomHex(6) + ":"
	a := startProcess(t, backend, url, prefix)
	b := startProcess(t, backend, url, prefix)
	g := &gateway{keys: keybus.New(keyStore(), nil, 0)}
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"jobs:write"}})
	codes := postConcurrently(t, 160, map[string]string{"X-API-Key": raw}, a.base, b.base)
	if codes[201] != 120 || codes[429] != 40 || len(codes) != 2 {
		t.Fatalf("status counts across both processes: %v; want 120 × 201 and 40 × 429", codes)
	}
}

// SIGTERM lets a request in flight finish before the process exits.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway binary")
	}
	backend := startBackend(t, "echo")
	p := startProcess(t, backend, redisURL, "test:"+randomHex(6)+":")
	g := &gateway{keys: keybus.New(keyStore(), nil, 0)}
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"read"}})
	got := make(chan response, 1)
	go func() { got <- do(t, "GET", p.base+"/v2/jobs?sleep_ms=800", "", map[string]string{"X-API-Key": raw}) }()
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.status != 200 {
		t.Fatalf("in-flight request during shutdown: %d %s", r.status, r.raw)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("gateway exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gateway did not exit after SIGTERM")
	}
}
