// Command bench measures coworkjobs the way clients use it: it builds and
// starts the suite on loopback (tests/suite) over a throwaway database filled
// with a large generated data set, drives the gateway with wrk for a bounded
// time per row, and prints one Markdown report: requests per second,
// latency percentiles and errors of each row, CPU time per request summed
// over the gateway, the backend, PostgreSQL and Redis, resident memory of
// every service idle, under load and under overload, and, measured in the
// same run, the ceilings each row is compared with: a bare Fiber
// hello-world, pgbench running the service's own list SQL, and the backend
// hit directly with a signed identity, a bare proxy and nginx in front of it.
//
//	go run ./tests/bench [-jobs 100000] [-duration 10s] [-growth 10000,100000,1000000] [-out report.md]
//
// `make bench` runs it (scripts/bench.sh installs wrk, pgbench and nginx when missing).
// It is not part of `make test`: it takes minutes and wants a quiet machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	Jobs, Cities, Spaces int
	Duration, Warmup     time.Duration
	Conns, Threads       int
	OverloadConns        int
	Rate                 int
	Growth               []int
	// Dictionary: after the growth sizes, this many creates with words of
	// their own, then row d again (what the typo dictionary's growth costs).
	Dictionary int
	Rows       map[string]bool // nil: every row
	Out        string
	ProfileRow string
	CacheStore string
	ProfileDir string
	Keep       bool
	Reuse      string
	// Plans, when set, is where writePlans writes the searches' plans
	// instead of running any row.
	Plans         string
	Rounds        int
	RoundDuration time.Duration
	Env           []string
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "proxy" {
		if err := serveProxy(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "proxy:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "hello" {
		if err := serveHello(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "hello:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	var growth, rows, env string
	flag.IntVar(&cfg.Jobs, "jobs", 100000, "generated jobs")
	flag.IntVar(&cfg.Cities, "cities", 2000, "generated cities")
	flag.IntVar(&cfg.Spaces, "spaces", 20000, "generated spaces")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time of each run (whole seconds, at most 50s: the direct rows' signed identity lives a minute)")
	flag.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured run before each measured one")
	flag.IntVar(&cfg.Conns, "c", 32, "wrk connections of the saturation rows")
	flag.IntVar(&cfg.Threads, "t", 1, "wrk threads")
	flag.IntVar(&cfg.OverloadConns, "overload", 2000, "wrk connections of the overload runs")
	flag.IntVar(&cfg.Rate, "rate", 500, "requests per second of the constant-rate run")
	flag.StringVar(&growth, "growth", "", "comma-separated job counts to rerun the list and search rows at (cost growth), e.g. 10000,100000,1000000")
	flag.IntVar(&cfg.Dictionary, "dictionary", 0, "with -growth: after the last size, this many creates with words of their own, then row d again, e.g. 100000")
	flag.StringVar(&rows, "rows", "", "comma-separated row ids to run (default all): hello,a,b1,b2,b3,b4,b5,b6,b7,b8 (b: all eight searches),c,d,e1,e2,f,g,h,rate,overload; the statistics' and batch rows go,pv,ys,batch (or stats for the four); the cached phase a$,h$,n,am, or cache for it and the rows it is compared with (a, h, hello)")
	flag.StringVar(&cfg.Out, "out", "", "also write the report to this file")
	flag.StringVar(&cfg.CacheStore, "cache-store", "redis", "RESPONSE_CACHE_STORE of the cached phase: redis (shared, the chart's default) or memory (per replica)")
	flag.StringVar(&cfg.ProfileRow, "profile", "", "row id whose measured run is CPU-profiled on the gateway and the backend (pprof from the admin port); batch profiles the jobs service for 5 s of the batches; overload: heap profiles under overload; end: each service's heap profile after the last row")
	flag.StringVar(&cfg.ProfileDir, "profile-dir", "bench-profiles", "where -profile writes gateway.pprof and <backend>.pprof")
	flag.IntVar(&cfg.Rounds, "rounds", 4, "interleaved rounds of row a: gateway, direct, bare proxy and nginx (when installed) in turn, the order rotated each round (0: none)")
	flag.DurationVar(&cfg.RoundDuration, "round-duration", 3*time.Second, "measured time of each target in each interleaved round")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the database (its name is printed) instead of dropping it")
	flag.StringVar(&cfg.Reuse, "reuse", "", "run on this database kept by an earlier -keep run, as it is (no seeding; -jobs must say what it holds), and keep it")
	flag.StringVar(&cfg.Plans, "plans", "", "write the search rows' EXPLAIN ANALYZE to this file (docs/search-plans.md) and run no row")
	flag.StringVar(&env, "env", "", "comma-separated NAME=value added to every service's environment (to try a setting)")
	flag.Parse()
	for _, g := range strings.Split(growth, ",") {
		if g = strings.TrimSpace(g); g != "" {
			n, err := strconv.Atoi(g)
			if err != nil || n < 1 {
				fmt.Fprintln(os.Stderr, "bench: -growth takes positive job counts")
				os.Exit(2)
			}
			cfg.Growth = append(cfg.Growth, n)
		}
	}
	if rows != "" {
		cfg.Rows = map[string]bool{}
		for _, r := range strings.Split(rows, ",") {
			cfg.Rows[strings.TrimSpace(r)] = true
		}
	}
	if env != "" {
		cfg.Env = strings.Split(env, ",")
	}
	if cfg.Reuse != "" && len(cfg.Growth) > 0 {
		fmt.Fprintln(os.Stderr, "bench: -growth seeds other sizes; it cannot run on a -reuse database")
		os.Exit(2)
	}
	if cfg.Duration < time.Second || cfg.Duration > 50*time.Second || cfg.Conns < 1 || cfg.Rate < 1 {
		fmt.Fprintln(os.Stderr, "bench: -duration must be 1s..50s, -c and -rate positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
