package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPUCountsFromTheLastParenthesis(t *testing.T) {
	// A command name may hold spaces and parentheses; utime 250 and stime 50
	// ticks are fields 14 and 15.
	line := "4242 (we (i) rd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1234 1000000 500 18446744073709551615"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 3*time.Second {
		t.Fatalf("got %v, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (truncated) S 1")); err == nil {
		t.Fatal("a short stat line was accepted")
	}
}

// This process's own CPU time, read the way the harness reads the services',
// grows when it works.
func TestCPUTimeOfThisProcessGrowsWithWork(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := uint64(1)
	for i := 0; i < 1<<34; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i&(1<<20-1) == 0 {
			if now, _ := cpuTime(os.Getpid()); now >= before+2*clockTick {
				return
			}
		}
	}
	t.Fatalf("no CPU time counted after 2^34 multiplications (%d)", x)
}

func TestReadRSSOfThisProcess(t *testing.T) {
	r, err := readRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if r.anon <= 0 || r.total < r.anon {
		t.Fatalf("rss %+v", r)
	}
}

func TestParseWrkSummary(t *testing.T) {
	out := "Running 10s test @ http://127.0.0.1:1\n  1 threads and 32 connections\n" +
		`WRKJSON {"requests":12000,"duration_us":10000000,"bytes":1,"connect":0,"read":1,"write":0,"status":3,"timeout":2,"p50":1500.0,"p90":2000.0,"p99":9000.5,"max":12000.0,"mean":1600.0}` + "\n"
	r, err := parseWrk([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if r.RPS() != 1200 || r.Errors() != 6 || r.P99 != 9000.5 {
		t.Fatalf("%+v: rps %v errors %d", r, r.RPS(), r.Errors())
	}
	if _, err := parseWrk([]byte("script error")); err == nil {
		t.Fatal("output without a summary was accepted")
	}
}

func TestLuaQuoteCannotBeClosedByItsContent(t *testing.T) {
	for _, s := range []string{`plain`, `a]]b`, `a]]b]=]c`} {
		q := luaQuote(s)
		open := q[:strings.IndexByte(q[1:], '[')+2]
		closing := "]" + strings.Repeat("=", len(open)-2) + "]"
		if strings.Contains(s, closing) || !strings.HasSuffix(q, s+closing) {
			t.Fatalf("luaQuote(%q) = %q", s, q)
		}
	}
	script := luaScript(load{Method: "POST", Headers: map[string]string{"X-API-Key": "k"},
		Requests: []request{{Path: "/v2/jobs", Body: `{"t":"%s"}`, Header: map[string]string{"Idempotency-Key": "i"}}}, Unique: true}, "n1")
	for _, want := range []string{"[ [[\nX-API-Key]] ]", "[ [[\nIdempotency-Key]] ]", `local unique = true`, `WRKJSON`} {
		if !strings.Contains(script, want) {
			t.Fatalf("script lacks %q:\n%s", want, script)
		}
	}
}

func TestPgbenchScriptKeepsTheStatementsParameterised(t *testing.T) {
	sts := []statement{
		{SQL: "SELECT count(*) FROM jobs WHERE city_slug = $1 AND job_type = $2", Args: []any{"berlin", "fulltime"}},
		{SQL: "SELECT id FROM jobs WHERE city_slug = $1 LIMIT $2 OFFSET $3", Args: []any{"berlin", float64(20), float64(0)}},
	}
	script, defs := pgbenchScript(sts, "v3")
	want := "\\startpipeline\nSELECT count(*) FROM jobs WHERE city_slug = :v3_0_1 AND job_type = :v3_0_2;\n" +
		"SELECT id FROM jobs WHERE city_slug = :v3_1_1 LIMIT :v3_1_2 OFFSET :v3_1_3;\n\\endpipeline\n"
	if script != want {
		t.Fatalf("script:\n%s\nwant:\n%s", script, want)
	}
	if strings.Join(defs, " ") != "v3_0_1=berlin v3_0_2=fulltime v3_1_1=berlin v3_1_2=20 v3_1_3=0" {
		t.Fatalf("defs %v", defs)
	}
	one, _ := pgbenchScript(sts[:1], "v0")
	if strings.Contains(one, "pipeline") {
		t.Fatalf("one statement in a pipeline: %s", one)
	}
}

func TestParsePgbench(t *testing.T) {
	out := "pgbench (15.20)\nnumber of transactions actually processed: 58\nnumber of failed transactions: 1 (1.7%)\nlatency average = 32.5 ms\ntps = 61.491617 (without initial connection time)\n"
	r, err := parsePgbench(out)
	if err != nil || r.Transactions != 58 || r.Failed != 1 || r.TPS < 61.49 || r.TPS > 61.5 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := parsePgbench("connection refused"); err == nil {
		t.Fatal("output without tps was accepted")
	}
}

func TestSum5xxAddsEveryRouteAndMethod(t *testing.T) {
	metrics := `# HELP http_requests_total x
http_requests_total{method="GET",route="/v2/jobs",status_class="2xx"} 100
http_requests_total{method="GET",route="/v2/jobs",status_class="5xx"} 3
http_requests_total{method="POST",route="/v2/jobs",status_class="5xx"} 4
http_request_duration_seconds_count{method="GET",route="/v2/jobs",status_class="5xx"} 99
`
	if n := sum5xx(strings.NewReader(metrics)); n != 7 {
		t.Fatalf("%d 5xx, want 7", n)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var v []time.Duration
	for i := 1; i <= 100; i++ {
		v = append(v, time.Duration(i))
	}
	if percentile(v, 50) != 50 || percentile(v, 99) != 99 || percentile(v, 100) != 100 || percentile(nil, 99) != 0 {
		t.Fatalf("p50 %v p99 %v", percentile(v, 50), percentile(v, 99))
	}
}
