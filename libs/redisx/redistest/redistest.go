// Package redistest starts a private Redis Cluster for tests: three or more
// masters on free loopback ports, each in a temp directory, without
// persistence, stopped by pid when the test ends. It needs redis-server and
// redis-cli (7.0 or later) on PATH.
package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster starts a Redis Cluster of masters (at least 3, no replicas) for
// tb and returns the URL naming it for redisx.Open:
// redis://127.0.0.1:P1?addr=127.0.0.1:P2&addr=127.0.0.1:P3.
func Cluster(tb testing.TB, masters int) string {
	tb.Helper()
	if masters < 3 {
		tb.Fatalf("redistest: a Redis Cluster needs at least 3 masters, not %d", masters)
	}
	dir := tb.TempDir()
	addrs := make([]string, masters)
	for i := range addrs {
		port, err := clusterPort()
		if err != nil {
			tb.Fatal(err)
		}
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
		startNode(tb, filepath.Join(dir, strconv.Itoa(port)), port)
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range addrs {
		if err := waitClusterOK(ctx, a); err != nil {
			tb.Fatal(err)
		}
	}
	return "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
}

// clusterPort picks a port below the ephemeral range whose cluster bus port
// (port + 10000) is free too.
func clusterPort() (int, error) {
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if free(port) && free(port+10000) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("redistest: no free port pair between 20000 and 42000")
}

func free(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// startNode runs one cluster-enabled redis-server in dir and stops it (by
// its pid) when tb ends.
func startNode(tb testing.TB, dir string, port int) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		tb.Fatal(err)
	}
	// Cancelling ctx (at cleanup) sends SIGTERM; WaitDelay kills a server
	// that has not exited 10 s later.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		logf.Close()
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logf.Name())
			tb.Fatalf("redistest: redis-server on %s exited at start:\n%s", addr, b)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: redis-server did not open %s", addr)
		}
	}
}

// waitClusterOK waits until the node at addr sees every slot served.
func waitClusterOK(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not ok at %s: %w %s", addr, err, info)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
