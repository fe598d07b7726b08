// Package faults runs private copies of the suite's dependencies — a
// PostgreSQL cluster, a Redis server and a Temporal dev server — on free
// loopback ports in temp directories, so that tests can stop, freeze, crash
// and restart them without touching the machine's shared servers (other
// packages' tests use those at the same time). Every process is started here
// and stopped here, by its own pid.
package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// Postgres is a private PostgreSQL cluster: its own data directory, socket
// directory and port. Database "coworkjobs" exists in it.
type Postgres struct {
	Dir  string // temp dir holding data/, the socket and the log
	Port int
	URL  string // of database coworkjobs

	bin    string // the server's bin directory (initdb, pg_ctl)
	asUser []string
}

// StartPostgres creates a cluster with initdb (trust auth, no fsync: the
// machine itself never crashes under it) and starts it. Commits stay
// synchronous, so a crash of the server loses nothing that was acknowledged. PostgreSQL refuses to run as root, so as root
// the cluster belongs to the postgres user and its tools run through runuser.
func StartPostgres(ctx context.Context) (*Postgres, error) {
	bin, err := pgtest.Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faults-pg")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("faults: running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		p.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	if p.Port, err = FreePort(); err != nil {
		return nil, err
	}
	if out, err := p.tool(ctx, "initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--no-sync", "--no-instructions"); err != nil {
		p.Remove()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := p.Start(ctx); err != nil {
		p.Remove()
		return nil, err
	}
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/coworkjobs?sslmode=disable", p.Port)
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port))
	if err != nil {
		p.Remove()
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE coworkjobs"); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) data() string { return filepath.Join(p.Dir, "data") }

func (p *Postgres) tool(ctx context.Context, name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, p.asUser...), filepath.Join(p.bin, name)), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
}

// Start starts the cluster on its port (again) and waits until it accepts
// connections.
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200",
		p.Port, p.Dir)
	if out, err := p.tool(ctx, "pg_ctl", "-D", p.data(), "-l", filepath.Join(p.Dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the cluster: mode "fast" (clients are disconnected, a clean
// shutdown) or "immediate" (a crash: no checkpoint, recovery at the next start).
func (p *Postgres) Stop(ctx context.Context, mode string) error {
	if out, err := p.tool(ctx, "pg_ctl", "-D", p.data(), "-m", mode, "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w\n%s", mode, err, out)
	}
	return nil
}

// Restart is a crash and a start: what a database failover looks like to
// the services (every pooled connection breaks at once).
func (p *Postgres) Restart(ctx context.Context) error {
	if err := p.Stop(ctx, "immediate"); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Freeze stops (SIGSTOP) the server and all its backends: connections stay
// open but nothing answers, the way a hung database or a partitioned network
// looks. Thaw resumes them.
func (p *Postgres) Freeze() error { return p.signalAll(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (p *Postgres) Thaw() error { return p.signalAll(syscall.SIGCONT) }

func (p *Postgres) signalAll(sig syscall.Signal) error {
	pid, err := p.postmasterPID()
	if err != nil {
		return err
	}
	pids := append([]int{pid}, children(pid)...)
	for _, c := range pids {
		if err := syscall.Kill(c, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal %d: %w", c, err)
		}
	}
	return nil
}

func (p *Postgres) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}

// children lists the pids whose parent is pid (from /proc).
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which may hold spaces: state, ppid, ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// Remove stops the cluster (if it runs) and deletes its directory.
func (p *Postgres) Remove() {
	if _, err := os.Stat(filepath.Join(p.data(), "postmaster.pid")); err == nil {
		_ = p.Thaw()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		_ = p.Stop(ctx, "immediate")
		cancel()
	}
	_ = os.RemoveAll(p.Dir)
}

// Log returns the server's log so far.
func (p *Postgres) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "server.log"))
	return string(b)
}

// Process is a dependency run as a child process that can be stopped and
// started again on the same port.
type Process struct {
	Name string
	Port int
	Addr string // 127.0.0.1:port
	argv []string
	log  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// startProcess runs the command argv(dir, port) makes, with a temp dir of its
// own and a free port, and waits for the port.
func startProcess(ctx context.Context, name string, argv func(dir, port string) []string) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faults-"+name)
	if err != nil {
		return nil, err
	}
	p := &Process{Name: name, Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), log: filepath.Join(dir, name+".log"),
		argv: argv(dir, strconv.Itoa(port))}
	return p, p.Start(ctx)
}

// StartRedis runs a private redis-server (no persistence) on a free port.
func StartRedis(ctx context.Context) (*Process, error) {
	return startProcess(ctx, "redis", func(dir, port string) []string {
		return []string{"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no"}
	})
}

// StartTemporal runs `temporal server start-dev` (no UI) on a free port,
// keeping its state in a SQLite file so that a restart finds it again, as a
// real cluster's would. bin is the temporal CLI (see TemporalCLI).
func StartTemporal(ctx context.Context, bin string) (*Process, error) {
	return startProcess(ctx, "temporal", func(dir, port string) []string {
		return []string{bin, "server", "start-dev", "--ip", "127.0.0.1", "--port", port, "--headless",
			"--log-level", "error", "--db-filename", filepath.Join(dir, "temporal.db"),
			// No fsync (the machine does not crash under it, as for PostgreSQL
			// above): on a loaded test machine a synced SQLite is what limits
			// how fast workflows start.
			"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=off"}
	})
}

// Temporal runs a Temporal dev server (StartTemporal with TemporalCLI) for
// test t and removes it when t ends.
func Temporal(t testing.TB) *Process {
	t.Helper()
	ctx := context.Background()
	cli, err := TemporalCLI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartTemporal(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Remove)
	return p
}

// Start starts the process (again) and waits until its port accepts
// connections.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("faults: %s is already running", p.Name)
		}
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	p.cmd, p.done = cmd, done
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	for {
		if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited at start: %s", p.Name, p.Log())
		case <-ctx.Done():
			return fmt.Errorf("%s did not open %s", p.Name, p.Addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 20 s).
func (p *Process) Stop() error { return p.signal(syscall.SIGTERM, 20*time.Second) }

// Freeze stops the process (SIGSTOP): its port accepts connections (the
// kernel's backlog) and nothing answers, the way a hung Redis or a
// partitioned network looks, and it keeps its data. Thaw resumes it.
func (p *Process) Freeze() error { return p.pause(syscall.SIGSTOP) }

// Thaw resumes a frozen process (SIGCONT).
func (p *Process) Thaw() error { return p.pause(syscall.SIGCONT) }

func (p *Process) pause(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("faults: %s is not running", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() error { return p.signal(syscall.SIGKILL, 10*time.Second) }

func (p *Process) signal(sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("faults: %s ignored %v", p.Name, sig)
	}
}

// Log returns what the process has written so far.
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Remove stops the process and deletes its directory.
func (p *Process) Remove() {
	_ = p.Stop()
	_ = os.RemoveAll(filepath.Dir(p.log))
}

// FreePort returns a loopback port nobody listens on now.
func FreePort() (int, error) {
	addr, err := suite.FreeAddr() // below the ephemeral range: see there
	if err != nil {
		return 0, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return strconv.Atoi(port)
}

// TemporalVersion is the Temporal CLI the project pins (its dev server).
const TemporalVersion = "v1.5.1"

// TemporalCLI returns the path of the temporal CLI: $TEMPORAL_CLI, then
// <repo>/bin/temporal, then one on PATH; when none exists it runs
// scripts/temporal.sh, which installs the pinned version into <repo>/bin
// with `go install` (a few minutes on a cold build cache).
func TemporalCLI(ctx context.Context) (string, error) {
	if p := os.Getenv("TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	root, err := repoRoot(ctx)
	if err != nil {
		return "", err
	}
	local := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "temporal.sh")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("scripts/temporal.sh: %w\n%s", err, out)
	}
	return local, nil
}

// repoRoot is the directory of the go.work file.
func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("faults: go env GOWORK: %w", err)
	}
	gowork := strings.TrimSpace(string(out))
	if gowork == "" || gowork == "off" {
		return "", fmt.Errorf("faults: no go.work found (GOWORK=%q)", gowork)
	}
	return filepath.Dir(gowork), nil
}
