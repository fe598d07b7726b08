package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// statement is one SQL statement with its arguments, as `jobs-seed list-sql`
// prints it.
type statement struct {
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
}

// listStatements asks the jobs service's own code (through jobs-seed) for
// the statements GET /v2/jobs runs with these filters: count and page when
// paginated, list otherwise. Returned in the order the service sends them.
func (b *bench) listStatements(ctx context.Context, args ...string) ([]statement, error) {
	out, err := b.s.Run(ctx, "jobs-seed", append([]string{"list-sql"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("jobs-seed list-sql: %w: %s", err, out)
	}
	var m map[string]statement
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("jobs-seed list-sql: %w", err)
	}
	var sts []statement
	for _, k := range []string{"count", "page", "list"} {
		if st, ok := m[k]; ok {
			sts = append(sts, st)
		}
	}
	return sts, nil
}

var placeholder = regexp.MustCompile(`\$(\d+)`)

// pgbenchScript turns statements into a pgbench script whose $n parameters
// are pgbench variables named prefix_n (set with -D), so that with -M prepared
// Postgres sees the same parameterised statements the service's pgx pool
// sends. Several statements go in one pipeline, as pgx batches them.
func pgbenchScript(sts []statement, prefix string) (string, []string) {
	var b strings.Builder
	var defs []string
	if len(sts) > 1 {
		b.WriteString("\\startpipeline\n")
	}
	seen := map[string]bool{}
	for si, st := range sts {
		sql := placeholder.ReplaceAllStringFunc(st.SQL, func(m string) string {
			// pgbench refuses an empty -D value: an empty text (a kept
			// plan's missing query) or NULL goes into the statement as it is.
			if i, err := strconv.Atoi(m[1:]); err == nil && i >= 1 && i <= len(st.Args) {
				switch a := st.Args[i-1]; {
				case a == nil:
					return "NULL"
				case pgText(a) == "":
					return "''"
				}
			}
			return fmt.Sprintf(":%s_%d_%s", prefix, si, m[1:])
		})
		b.WriteString(strings.TrimSpace(sql))
		b.WriteString(";\n")
		for i, a := range st.Args {
			name := fmt.Sprintf("%s_%d_%d", prefix, si, i+1)
			if !seen[name] && a != nil && pgText(a) != "" {
				seen[name] = true
				defs = append(defs, name+"="+pgText(a))
			}
		}
	}
	if len(sts) > 1 {
		b.WriteString("\\endpipeline\n")
	}
	return b.String(), defs
}

// pgText writes an argument as PostgreSQL's text input reads it: pgbench's
// -D variables are text, and the statements' JSON gave arrays as []any (the
// search's words: fmt.Sprint wrote "[community]", which PostgreSQL refuses)
// and numbers as float64 (fmt.Sprint writes 1e+06).
func pgText(a any) string {
	switch v := a.(type) {
	case []any:
		quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
		parts := make([]string, len(v))
		for i, e := range v {
			if e == nil {
				parts[i] = "NULL"
				continue
			}
			parts[i] = `"` + quote.Replace(pgText(e)) + `"`
		}
		return "{" + strings.Join(parts, ",") + "}"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(a)
}

// pgbenchResult is one pgbench run.
type pgbenchResult struct {
	Transactions int64
	Failed       int64
	TPS          float64
	P50, P99     time.Duration
	CPU          time.Duration // pgbench's own CPU
}

var (
	tpsRE    = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	txRE     = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	failedRE = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
)

// runPgbench runs the scripts (one per query variant, equal weights) with
// clients connections for d against dbURL with search_path set to schema.
func runPgbench(ctx context.Context, dir, dbURL, schema string, scripts [][]statement, clients int, d time.Duration) (pgbenchResult, error) {
	run, err := os.MkdirTemp(dir, "pgbench")
	if err != nil {
		return pgbenchResult{}, err
	}
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", "2",
		"-T", strconv.Itoa(int(d.Seconds())), "-l", "--log-prefix", filepath.Join(run, "tx")}
	for i, sts := range scripts {
		script, defs := pgbenchScript(sts, fmt.Sprintf("v%d", i))
		f := filepath.Join(run, fmt.Sprintf("q%d.sql", i))
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			return pgbenchResult{}, err
		}
		args = append(args, "-f", f+"@1")
		for _, d := range defs {
			args = append(args, "-D", d)
		}
	}
	args = append(args, dbURL)
	ctx, cancel := context.WithTimeout(ctx, d+60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pgbench", args...)
	// The settings the jobs API's connections start with (jobdb.PoolParams):
	// at PostgreSQL's default work_mem a common term's bitmap goes lossy at
	// 1 M jobs, and the ceiling would be measured on a slower plan.
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema+" -c work_mem=16MB")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench: %w\n%s", err, out.String())
	}
	res, err := parsePgbench(out.String())
	if err != nil {
		return res, err
	}
	res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	lat, err := pgbenchLatencies(run)
	if err != nil {
		return res, err
	}
	res.P50, res.P99 = percentile(lat, 50), percentile(lat, 99)
	return res, nil
}

func parsePgbench(out string) (pgbenchResult, error) {
	var r pgbenchResult
	m := tpsRE.FindStringSubmatch(out)
	t := txRE.FindStringSubmatch(out)
	if m == nil || t == nil {
		return r, fmt.Errorf("pgbench: no tps in output:\n%s", out)
	}
	r.TPS, _ = strconv.ParseFloat(m[1], 64)
	r.Transactions, _ = strconv.ParseInt(t[1], 10, 64)
	if f := failedRE.FindStringSubmatch(out); f != nil {
		r.Failed, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return r, nil
}

// pgbenchLatencies reads the per-transaction logs (-l): the third field of
// each line is the transaction's latency in microseconds.
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx*"))
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			if us, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
		f.Close()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}
