// Package suite runs coworkjobs as real processes on loopback: the commands
// are built once per test binary, every process gets free ports, its own log
// file and one shared environment, so end-to-end, reliability and benchmark
// code all drive the same thing a deployment runs. Processes can be killed
// and started again on the same address to inject faults.
package suite

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// APIs are the HTTP services in the order they must start: the directory
// first (the jobs service and the jobs seed read its catalog), the gateway
// last (its health polls the others).
var APIs = []string{"directory", "jobs", "content", "community", "gateway"}

// DemoSeeds load the demo data of every service.
var DemoSeeds = [][]string{{"directory-seed", "demo"}, {"jobs-seed", "demo"}, {"content-seed", "demo"}, {"community-seed", "demo"}}

// Options choose what to run. The zero value of each field is a sensible
// default except DatabaseURL, which is required.
type Options struct {
	// Name labels the temp dirs and the Redis key prefix.
	Name string
	// DatabaseURL of a throwaway database (see libs/pg/pgtest).
	DatabaseURL string
	// RedisURL defaults to TEST_REDIS_URL, then the local Redis.
	RedisURL string
	// Services to start, in order (default APIs).
	Services []string
	// Workers to start after the services ("jobs-worker", "community-worker").
	Workers []string
	// Seeds run after the processes are ready; nil means DemoSeeds, an empty
	// non-nil slice means none.
	Seeds [][]string
	// Keys runs `gateway-keys demo` and fills Suite.Keys.
	Keys bool
	// Admin gives every process an admin address (/metrics); without it
	// ADMIN_ADDR=off.
	Admin bool
	// Pprof gives every process a pprof address (PPROF_ADDR; Suite.Pprof).
	Pprof bool
	// Env is added to every process's environment (and overrides the
	// defaults, e.g. TEMPORAL_ADDRESS or LOG_LEVEL).
	Env []string
	// ServiceEnv is added to one command's processes only, after Env (by
	// command: "jobs" for every jobs replica), e.g. the chart's GOMEMLIMIT.
	ServiceEnv map[string][]string
	// Out receives a note per step; nil is silent.
	Out io.Writer
	// Replicas runs each API as this many processes ("jobs#1", "jobs#2", ...)
	// behind a balancer that, like a Kubernetes Service, sends new
	// connections to the replicas whose /readyz passes; URL[name] is the
	// balancer. 0 or 1: one process, no balancer.
	Replicas int
	// PublicGateway makes PUBLIC_BASE_URL the gateway's own address, so that
	// the links in pages and mails work from a browser on this machine.
	PublicGateway bool
}

// Suite is the running system.
type Suite struct {
	Bin    string            // directory of the built commands
	LogDir string            // one <process>.log per process (appended across restarts)
	Env    []string          // the environment every process gets
	URL    map[string]string // API base URL by process ("http://127.0.0.1:port")
	Admin  map[string]string // admin base URL by process (only with Options.Admin)
	Pprof  map[string]string // pprof base URL by process (only with Options.Pprof)
	Keys   map[string]string // demo keys by kind ("live platform key", ...), with Options.Keys

	mu        sync.Mutex
	procs     map[string]*proc
	opts      Options
	replicas  map[string][]string // API name -> its replica process names
	balancers []*balancer
}

// DatabaseURL is the database the system runs on.
func (s *Suite) DatabaseURL() string { return s.opts.DatabaseURL }

// Replicas returns the process names of API name: its replicas with
// Options.Replicas, otherwise name itself.
func (s *Suite) Replicas(name string) []string {
	if r := s.replicas[name]; len(r) > 0 {
		return r
	}
	return []string{name}
}

// command is the built command a process runs: a replica "jobs#2" runs jobs.
func command(name string) string {
	if i := strings.IndexByte(name, '#'); i >= 0 {
		return name[:i]
	}
	return name
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Build compiles every command of the services once per process and returns
// the directory holding them.
func Build() (string, error) {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "coworkjobs-bin")
		if buildErr != nil {
			return
		}
		// -tags: GO_TAGS in the Makefile says why.
		out, err := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", buildDir+"/", "github.com/coworkjobs/coworkjobs/services/...").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build: %w\n%s", err, out)
		}
	})
	return buildDir, buildErr
}

// Cleanup removes the commands Build compiled (hundreds of MB per test
// binary); call it once when no Suite of this process runs any more, e.g.
// deferred in TestMain.
func Cleanup() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// Start builds the commands, starts the processes, waits for each to be
// ready, runs the seeds and creates the demo keys. On error the processes
// already started are stopped.
func Start(ctx context.Context, o Options) (*Suite, error) {
	if o.DatabaseURL == "" {
		return nil, errors.New("suite: Options.DatabaseURL is required")
	}
	if o.Name == "" {
		o.Name = "suite"
	}
	if o.RedisURL == "" {
		o.RedisURL = EnvOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
	}
	if o.Services == nil {
		o.Services = APIs
	}
	if o.Seeds == nil {
		o.Seeds = DemoSeeds
	}
	bin, err := Build()
	if err != nil {
		return nil, err
	}
	s := &Suite{Bin: bin, URL: map[string]string{}, Admin: map[string]string{}, Pprof: map[string]string{}, Keys: map[string]string{},
		procs: map[string]*proc{}, opts: o, replicas: map[string][]string{}}
	if s.LogDir, err = os.MkdirTemp("", o.Name+"-logs"); err != nil {
		return nil, err
	}
	var procs []string // every process, in start order
	for _, name := range o.Services {
		if o.Replicas < 2 || !isAPI(name) {
			procs = append(procs, name)
			continue
		}
		for i := 1; i <= o.Replicas; i++ {
			s.replicas[name] = append(s.replicas[name], fmt.Sprintf("%s#%d", name, i))
		}
		procs = append(procs, s.replicas[name]...)
	}
	procs = append(procs, o.Workers...)
	for _, name := range procs {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		s.URL[name] = "http://" + a
		if o.Admin {
			if a, err = FreeAddr(); err != nil {
				return nil, err
			}
			s.Admin[name] = "http://" + a
		}
		if o.Pprof {
			if a, err = FreeAddr(); err != nil {
				return nil, err
			}
			s.Pprof[name] = "http://" + a
		}
	}
	for _, name := range o.Services {
		if len(s.replicas[name]) == 0 {
			continue
		}
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		var rs []balancerReplica
		for _, r := range s.replicas[name] {
			rs = append(rs, balancerReplica{addr: strings.TrimPrefix(s.URL[r], "http://"), probe: s.URL[r] + "/readyz"})
		}
		b, err := newBalancer(a, rs)
		if err != nil {
			return nil, err
		}
		s.balancers = append(s.balancers, b)
		s.URL[name] = "http://" + a
	}
	backend := func(name, def string) string {
		if u, ok := s.URL[name]; ok {
			return u
		}
		return def // not started: a closed port, so calls fail fast
	}
	s.Env = append(os.Environ(),
		"DATABASE_URL="+o.DatabaseURL, "INTERNAL_IDENTITY_SECRET="+RandomHex(24), "NEWSLETTER_TOKEN_SECRET="+RandomHex(24),
		"REDIS_URL="+o.RedisURL, "REDIS_KEY_PREFIX="+o.Name+":"+RandomHex(4)+":",
		"PUBLIC_BASE_URL=http://coworkjobs.test",
		"DIRECTORY_URL="+backend("directory", "http://127.0.0.1:1"), "JOBS_URL="+backend("jobs", "http://127.0.0.1:1"),
		"CONTENT_URL="+backend("content", "http://127.0.0.1:1"), "COMMUNITY_URL="+backend("community", "http://127.0.0.1:1"),
		// No Temporal unless the caller brings one: job creation must not
		// depend on it (the outbox keeps the expiry until it is back).
		"TEMPORAL_ADDRESS=127.0.0.1:1", "LOG_LEVEL=warn", "ACCESS_LOG=false", "SMTP_URL=smtp://127.0.0.1:1")
	if !o.Admin {
		s.Env = append(s.Env, "ADMIN_ADDR=off")
	}
	if o.PublicGateway {
		s.Env = append(s.Env, "PUBLIC_BASE_URL="+s.URL["gateway"])
	}
	s.Env = append(s.Env, o.Env...)

	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	for _, name := range procs {
		s.note("starting %s at %s", name, s.URL[name])
		if err := s.Start(ctx, name); err != nil {
			return nil, err
		}
	}
	for _, seed := range o.Seeds {
		s.note("seeding: %s", strings.Join(seed, " "))
		if out, err := s.Run(ctx, seed[0], seed[1:]...); err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", strings.Join(seed, " "), err, out)
		}
	}
	if o.Keys {
		out, err := s.Run(ctx, "gateway-keys", "demo")
		if err != nil {
			return nil, fmt.Errorf("gateway-keys demo: %w\n%s", err, out)
		}
		// Lines are "<kind words...> <key>".
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) > 1 && strings.HasPrefix(f[len(f)-1], "svc_") {
				s.Keys[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
			}
		}
		if len(s.Keys) == 0 {
			return nil, fmt.Errorf("gateway-keys demo printed no keys: %q", out)
		}
	}
	ok = true
	return s, nil
}

// Start starts process name (again) on its address and waits until it is
// ready: /readyz for an API, /metrics on the admin port for a worker with
// one, otherwise a short grace period.
func (s *Suite) Start(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("suite: %s is already running", name)
		}
	}
	cmd := exec.Command(filepath.Join(s.Bin, command(name)))
	dieWithParent(cmd)
	cmd.Env = append(append([]string{}, s.Env...), "HTTP_ADDR="+strings.TrimPrefix(s.URL[name], "http://"))
	cmd.Env = append(cmd.Env, s.opts.ServiceEnv[command(name)]...)
	if a, ok := s.Admin[name]; ok {
		cmd.Env = append(cmd.Env, "ADMIN_ADDR="+strings.TrimPrefix(a, "http://"))
	}
	if a, ok := s.Pprof[name]; ok {
		cmd.Env = append(cmd.Env, "PPROF_ADDR="+strings.TrimPrefix(a, "http://"))
	}
	f, err := os.OpenFile(filepath.Join(s.LogDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	s.procs[name] = p

	probe := ""
	switch {
	case isAPI(command(name)):
		probe = s.URL[name] + "/readyz"
	case s.Admin[name] != "":
		probe = s.Admin[name] + "/metrics"
	}
	if probe == "" {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited at start: %s", name, s.tail(name))
		case <-time.After(500 * time.Millisecond):
			return nil
		}
	}
	if err := waitReady(ctx, probe, p.done, 60*time.Second); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, s.tail(name))
	}
	return nil
}

func isAPI(name string) bool {
	for _, a := range APIs {
		if a == name {
			return true
		}
	}
	return false
}

// Kill sends SIGKILL to process name and waits for it to be gone: a crash,
// with no chance to drain.
func (s *Suite) Kill(name string) error { return s.signal(name, syscall.SIGKILL, 10*time.Second) }

// Terminate sends SIGTERM (a graceful stop) and waits up to 30 s.
func (s *Suite) Terminate(name string) error { return s.signal(name, syscall.SIGTERM, 30*time.Second) }

func (s *Suite) signal(name string, sig syscall.Signal, wait time.Duration) error {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("suite: no process %s", name)
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("suite: %s ignored %v for %s", name, sig, wait)
	}
}

// PID of process name, 0 when it is not running.
func (s *Suite) PID(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[name]
	if p == nil {
		return 0
	}
	select {
	case <-p.done:
		return 0
	default:
		return p.cmd.Process.Pid
	}
}

// Run runs one of the built commands (a seed, gateway-keys) to completion
// with the suite's environment and returns its standard output (standard
// error too when it fails).
func (s *Suite) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.Bin, name), args...)
	cmd.Env = s.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// Stop stops every process gracefully (SIGTERM, then SIGKILL after 10 s).
func (s *Suite) Stop() {
	s.mu.Lock()
	procs := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	for _, b := range s.balancers {
		b.Close()
	}
}

// DumpLogs writes the tail of every process's log to w (for a failed run).
func (s *Suite) DumpLogs(w io.Writer) {
	entries, _ := os.ReadDir(s.LogDir)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".log")
		fmt.Fprintf(w, "----- %s -----\n%s\n", name, s.tail(name))
	}
}

// Log returns everything process name has written so far.
func (s *Suite) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.LogDir, name+".log"))
	return string(b)
}

func (s *Suite) tail(name string) string {
	b := s.Log(name)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return b
}

func (s *Suite) note(format string, args ...any) {
	if s.opts.Out != nil {
		fmt.Fprintf(s.opts.Out, "suite: "+format+"\n", args...)
	}
}

func waitReady(ctx context.Context, url string, exited <-chan struct{}, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready at %s", url)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Envelope is the body every answer of the API shares, decoded loosely so
// tests can look at data and error details in their own shapes.
type Envelope = webtest.Envelope

// FreeAddr returns a loopback address with a port nobody listens on now.
//
// The port is picked below the kernel's ephemeral range (32768 and up on
// Linux): a port the kernel handed out for ":0" and that was released again
// could be taken by any outgoing connection before the process binds it,
// which CI saw ("bind: address already in use") with many suites at work.
//
// A port is also claimed for the life of the test process (an flock on a
// file named by it), so that suites of other test packages running at the
// same time never pick it before this one's process binds it: two did, and
// one suite's requests went to the other's gateway (a 404 from CI).
func FreeAddr() (string, error) {
	for range 200 {
		port := 20000 + mrand.IntN(12000)
		if !claimPort(port) {
			continue // another test process has it
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken: try another
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr, nil
	}
	return "", errors.New("suite: no free port between 20000 and 32000")
}

// claimed keeps the claims' files open: the kernel releases an flock when
// the process that holds it ends, however it ends.
var claimed sync.Map

// claimPort reports whether this process now holds port's claim (or held it).
func claimPort(port int) bool {
	if _, ok := claimed.Load(port); ok {
		return false // handed out already
	}
	dir := filepath.Join(os.TempDir(), "coworkjobs-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true // no claims on this machine: the listen check alone
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	claimed.Store(port, f)
	return true
}

// EnvOr is os.Getenv with a default.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// RandomHex returns n random bytes, hex-encoded.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
