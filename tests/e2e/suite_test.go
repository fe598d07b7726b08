// Package e2e runs the whole suite as real processes (gateway, jobs,
// directory, content, community) on loopback against a throwaway database and
// the real Redis, loads the demo data with the seed commands, and drives the
// main flows through the gateway only, the way a client would.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

// suite is the running system.
type suite struct {
	gateway string            // base URL
	direct  map[string]string // backend base URLs, to prove they refuse direct calls
	keys    map[string]string // demo keys by kind
	logDir  string
	bin     string
	env     []string
}

var s suite

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	os.Exit(pgtest.Main("e2e", func() int {
		stop, err := start()
		defer stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: start:", err)
			dumpLogs()
			return 1
		}
		code := m.Run()
		if code != 0 {
			dumpLogs()
		}
		return code
	}, func(u string) { dbURL = u }))
}

var dbURL string

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

func start() (func(), error) {
	var procs []*exec.Cmd
	stop := func() {
		for _, p := range procs {
			_ = p.Process.Signal(os.Interrupt)
		}
		for _, p := range procs {
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = p.Process.Kill()
			}
		}
	}
	bin, err := os.MkdirTemp("", "e2e-bin")
	if err != nil {
		return stop, err
	}
	s.logDir, _ = os.MkdirTemp("", "e2e-logs")
	s.bin = bin
	build := exec.Command("go", "build", "-o", bin+"/", "github.com/coworkjobs/coworkjobs/services/...")
	if out, err := build.CombinedOutput(); err != nil {
		return stop, fmt.Errorf("build: %v\n%s", err, out)
	}
	secret := randomHex(24)
	ports := map[string]string{}
	for _, name := range []string{"gateway", "jobs", "directory", "content", "community"} {
		if ports[name], err = freePort(); err != nil {
			return stop, err
		}
	}
	url := func(name string) string { return "http://127.0.0.1:" + ports[name] }
	s.gateway = url("gateway")
	s.direct = map[string]string{"jobs": url("jobs"), "directory": url("directory"), "content": url("content"), "community": url("community")}
	env := append(os.Environ(),
		"DATABASE_URL="+dbURL, "INTERNAL_IDENTITY_SECRET="+secret, "NEWSLETTER_TOKEN_SECRET="+randomHex(24),
		"REDIS_URL="+envOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "REDIS_KEY_PREFIX=e2e:"+randomHex(4)+":",
		"PUBLIC_BASE_URL=http://coworkjobs.test", "DIRECTORY_URL="+url("directory"),
		"JOBS_URL="+url("jobs"), "CONTENT_URL="+url("content"), "COMMUNITY_URL="+url("community"),
		// No Temporal server here: job creation must not depend on it.
		"TEMPORAL_ADDRESS=127.0.0.1:1", "ADMIN_ADDR=off", "LOG_LEVEL=warn", "ACCESS_LOG=false")
	s.env = env
	run := func(name string, extra ...string) error {
		cmd := exec.Command(filepath.Join(bin, name))
		cmd.Env = append(append([]string{}, env...), extra...)
		f, err := os.Create(filepath.Join(s.logDir, name+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		return nil
	}
	// The directory first: the jobs seed reads its catalog.
	for _, name := range []string{"directory", "jobs", "content", "community", "gateway"} {
		if err := run(name, "HTTP_ADDR=127.0.0.1:"+ports[name]); err != nil {
			return stop, err
		}
		if err := waitReady(url(name)); err != nil {
			return stop, fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, seed := range []string{"directory-seed", "jobs-seed", "content-seed", "community-seed"} {
		cmd := exec.Command(filepath.Join(bin, seed), "demo")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return stop, fmt.Errorf("%s: %v\n%s", seed, err, out)
		}
	}
	cmd := exec.Command(filepath.Join(bin, "gateway-keys"), "demo")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return stop, fmt.Errorf("gateway-keys demo: %w", err)
	}
	s.keys = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 1 {
			s.keys[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
		}
	}
	return stop, nil
}

func waitReady(base string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready at %s", base)
}

func dumpLogs() {
	entries, _ := os.ReadDir(s.logDir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(s.logDir, e.Name()))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		fmt.Fprintf(os.Stderr, "----- %s -----\n%s\n", e.Name(), b)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// envelope is the response body every route shares.
type envelope struct {
	Success bool            `json:"success"`
	Status  int             `json:"status"`
	Data    json.RawMessage `json:"data"`
	Error   *struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	} `json:"error"`
}

type reply struct {
	status int
	header http.Header
	env    envelope
	raw    []byte
}

func (r reply) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.env.Data, v); err != nil {
		t.Fatalf("decode data: %v: %s", err, r.raw)
	}
}

var httpClient = &http.Client{Timeout: 15 * time.Second}

var checker = mustChecker()

func mustChecker() *contract.Checker {
	c, err := contract.New()
	if err != nil {
		panic(err)
	}
	return c
}

// call sends a request (key "" sends none) and checks the answer against the
// OpenAPI document.
func call(t *testing.T, method, url, key, body string, hdr ...string) reply {
	t.Helper()
	return send(t, true, method, url, key, body, hdr...)
}

// callUndocumented is call for a route the document cannot describe (an
// unknown path, a wrong method): only the envelope is checked.
func callUndocumented(t *testing.T, method, url, key, body string) reply {
	t.Helper()
	return send(t, false, method, url, key, body)
}

func send(t *testing.T, check bool, method, url, key, body string, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	// Every answer must be what the OpenAPI document promises.
	if check && strings.HasPrefix(url, s.gateway) {
		if err := checker.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
			t.Errorf("contract: %v", err)
		}
	}
	if resp.StatusCode != http.StatusNotModified {
		if err := json.Unmarshal(raw, &r.env); err != nil {
			t.Fatalf("%s %s: not an envelope (%d): %.300s", method, url, resp.StatusCode, raw)
		}
		if r.env.Status != r.status {
			t.Fatalf("%s %s: envelope status %d, HTTP %d", method, url, r.env.Status, r.status)
		}
	}
	return r
}
