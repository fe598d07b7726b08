package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nginxConf is what an operator would otherwise put in front of a backend: a
// plain proxy_pass with upstream keepalive, no key check and no limit. Every
// path it writes lies under its prefix (Debian's build points the pid file
// and the temp paths at /run and /var/lib/nginx, which the package's own
// service uses). keepalive_requests is raised on both sides because nginx's
// default (1000) closes each connection after that many requests, which
// neither the gateway nor the bare proxy does; wrk would then measure
// reconnects.
func nginxConf(dir, addr, backend string, workers int) string {
	return fmt.Sprintf(`worker_processes %d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	keepalive_requests 1000000;
	upstream backend {
		server %[4]s;
		keepalive 64;
		keepalive_requests 1000000;
	}
	server {
		listen %[3]s;
		location / {
			proxy_pass http://backend;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
`, workers, dir, addr, backend)
}

// nginxWorkers is what the bare proxy gets: it is this same program, started
// with the same environment and CPU set, so its GOMAXPROCS is this process's.
// Then nginx and the bare proxy run relaying code on as many cores at once.
func nginxWorkers() int { return runtime.GOMAXPROCS(0) }

// nginxBinary finds Debian's nginx, which lives in /usr/sbin (not on every
// user's PATH).
func nginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx is not installed (scripts/bench.sh installs Debian's package)")
}

// nginxProc is an nginx master process started by the bench, with its workers.
type nginxProc struct {
	cmd    *exec.Cmd
	dir    string
	stderr *bytes.Buffer
	exited chan error
}

// startNginx runs nginx in the foreground from its own temporary prefix,
// relaying addr to backend, and waits until url (on addr) answers.
func startNginx(ctx context.Context, url, addr, backend string, workers int) (*nginxProc, error) {
	bin, err := nginxBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "coworkjobs-bench-nginx")
	if err != nil {
		return nil, err
	}
	// Started as root, nginx runs its workers as nobody, who must reach the
	// temp paths nginx creates for them under the prefix.
	conf := filepath.Join(dir, "nginx.conf")
	if err := errors.Join(os.Chmod(dir, 0o755), os.WriteFile(conf, []byte(nginxConf(dir, addr, backend, workers)), 0o644)); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n := &nginxProc{dir: dir, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	n.cmd = exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	n.cmd.Stdout, n.cmd.Stderr = n.stderr, n.stderr
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() { n.exited <- n.cmd.Wait() }()
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- waitHTTP(waitCtx, url) }()
	select {
	case err = <-ready:
		if err == nil {
			return n, nil
		}
		_ = n.cmd.Process.Kill()
		err = errors.Join(err, <-n.exited)
	case err = <-n.exited:
		err = fmt.Errorf("nginx exited (%w)", err)
	}
	why := strings.TrimSpace(n.stderr.String() + " " + n.logged())
	os.RemoveAll(dir)
	return nil, fmt.Errorf("%w: %s", err, why)
}

// pids are the master and its workers, found again at each call (a worker
// that dies is replaced).
func (n *nginxProc) pids() []int {
	master := n.cmd.Process.Pid
	return append([]int{master}, childPIDs(master)...)
}

// childPIDs lists the processes whose parent is ppid.
func childPIDs(ppid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && parentPID(pid) == ppid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// logged is what nginx wrote to its error log (warnings and worse).
func (n *nginxProc) logged() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "error.log"))
	return strings.TrimSpace(string(b))
}

// Stop ends nginx (SIGQUIT: the workers finish their requests and exit, then
// the master) and removes its prefix; it returns what nginx logged.
func (n *nginxProc) Stop() string {
	workers := childPIDs(n.cmd.Process.Pid)
	_ = n.cmd.Process.Signal(syscall.SIGQUIT)
	var exit error
	select {
	case exit = <-n.exited:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		for _, pid := range workers {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		exit = <-n.exited
	}
	logged := n.logged()
	if exit != nil {
		logged += "\n(nginx: " + exit.Error() + ")"
	}
	_ = os.RemoveAll(n.dir)
	return logged
}

// nginxVersion is for the report's machine line.
func nginxVersion() string {
	bin, err := nginxBinary()
	if err != nil {
		return "no nginx"
	}
	return firstLine(bin, "-v")
}
