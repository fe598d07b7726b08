package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTick is the unit of utime/stime in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's HZ.
const clockTick = 10 * time.Millisecond

// cpuTime returns the user+system CPU time a process has used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads fields 14 (utime) and 15 (stime) of a /proc/<pid>/stat
// line. The command name (field 2) may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat: utime %q stime %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// rss is a process's resident set: all of it (VmRSS) and the anonymous
// part (RssAnon: heap, stacks), which is what the program allocates; the
// rest is mostly its executable's pages mapped from the page cache.
type rss struct{ total, anon int64 }

func readRSS(pid int) (rss, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rss{}, err
	}
	total, err := parseStatusKB(b, "VmRSS:")
	if err != nil {
		return rss{}, err
	}
	anon, err := parseStatusKB(b, "RssAnon:")
	return rss{total, anon}, err
}

func parseStatusKB(b []byte, field string) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("status: odd %s line %q", field, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("status: no %s", field)
}

// pidsByComm lists the processes whose command name is comm.
func pidsByComm(comm string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cpuGroup is a named set of processes whose CPU time is added up, such as
// "postgres": the set is found again at every snapshot, since backends come
// and go.
type cpuGroup struct {
	name string
	pids func() []int
}

// cpuSnapshot holds each process's CPU time at one moment, by group.
type cpuSnapshot map[string]map[int]time.Duration

func takeCPU(groups []cpuGroup) cpuSnapshot {
	snap := cpuSnapshot{}
	for _, g := range groups {
		m := map[int]time.Duration{}
		for _, pid := range g.pids() {
			if t, err := cpuTime(pid); err == nil {
				m[pid] = t
			}
		}
		snap[g.name] = m
	}
	return snap
}

// cpuDelta is the CPU each group used between two snapshots. A process that
// appeared in between counts whole (it started during the run).
func cpuDelta(before, after cpuSnapshot) map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, procs := range after {
		var d time.Duration
		for pid, t := range procs {
			d += t - before[name][pid]
		}
		out[name] = d
	}
	return out
}

// cpuTracker samples the groups while a run goes on and keeps the last
// time seen of every process, so that a process that ends before the run
// does (pgbench's backends when it disconnects) still counts, less at most
// one sampling interval.
type cpuTracker struct {
	before cpuSnapshot
	mu     sync.Mutex
	last   cpuSnapshot
	stop   chan struct{}
	done   chan struct{}
}

func trackCPU(groups []cpuGroup, every time.Duration) *cpuTracker {
	t := &cpuTracker{before: takeCPU(groups), last: cpuSnapshot{}, stop: make(chan struct{}), done: make(chan struct{})}
	merge := func() {
		snap := takeCPU(groups)
		t.mu.Lock()
		defer t.mu.Unlock()
		for name, procs := range snap {
			if t.last[name] == nil {
				t.last[name] = map[int]time.Duration{}
			}
			for pid, v := range procs {
				t.last[name][pid] = v
			}
		}
	}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				merge()
				return
			case <-tick.C:
				merge()
			}
		}
	}()
	return t
}

// Stop takes a last sample and returns the CPU each group used.
func (t *cpuTracker) Stop() map[string]time.Duration {
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return cpuDelta(t.before, t.last)
}

// rssSampler records the largest resident size of each watched process
// while it runs.
type rssSampler struct {
	mu   sync.Mutex
	peak map[string]rss
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pids map[string]int, every time.Duration) *rssSampler {
	s := &rssSampler{peak: map[string]rss{}, stop: make(chan struct{}), done: make(chan struct{})}
	sample := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for name, pid := range pids {
			if r, err := readRSS(pid); err == nil {
				s.peak[name] = maxRSS(s.peak[name], r)
			}
		}
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			sample()
			select {
			case <-s.stop:
				sample()
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the peaks.
func (s *rssSampler) Stop() map[string]rss {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]rss, len(s.peak))
	for k, v := range s.peak {
		out[k] = v
	}
	return out
}

// maxRSS keeps the larger of each figure (they may peak at different moments).
func maxRSS(a, b rss) rss { return rss{max(a.total, b.total), max(a.anon, b.anon)} }
