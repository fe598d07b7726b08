package tests

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api/scopes"
)

// relevanceRedis is TestRelevance's own Redis database.
const relevanceRedis = "redis://127.0.0.1:6379/15" // not 14: make bench's

var relevanceDump = flag.Bool("relevance-dump", false, "print every relevance query's results")

// relevanceQuery is one line of testdata/relevance/queries.tsv: the jobs
// (titles) that must come back, the one that must come first ("" when the
// first place is a tie), or none at all (must empty, first "-").
type relevanceQuery struct {
	q     string
	must  []string
	first string
	line  int
}

func readTSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			rows = append(rows, nil) // keeps line numbers
			continue
		}
		rows = append(rows, strings.Split(line, "\t"))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestRelevance runs the relevance suite: the fixed data set of
// testdata/relevance/jobs.tsv (one space of its own, so nothing else in
// the database interferes) and the queries of queries.tsv through GET
// /v2/jobs. Any query that misses a job it must find, ranks the wrong job
// first or finds something where it must find nothing fails the test;
// recall and MRR are printed (make test shows them) to compare changes.
func TestRelevance(t *testing.T) {
	t.Parallel()
	const space = 1950 // a Pro space of the fixture: every job is active at once
	key := liveKey(950, space)
	for i, row := range readTSV(t, "testdata/relevance/jobs.tsv") {
		if row == nil {
			continue
		}
		if len(row) != 3 {
			t.Fatalf("jobs.tsv:%d: want title, company, tags", i+1)
		}
		body := jobBody(row[0], 1950)
		body["company"], body["tags"] = row[1], row[2]
		if cr := create(t, key, body); cr.Status != "active" {
			t.Fatalf("%s: %+v", row[0], cr)
		}
		// date_added must differ for "newest" to be a total order
		time.Sleep(2 * time.Millisecond)
	}

	var queries []relevanceQuery
	for i, row := range readTSV(t, "testdata/relevance/queries.tsv") {
		if row == nil {
			continue
		}
		if len(row) != 3 {
			t.Fatalf("queries.tsv:%d: want query, must, first", i+1)
		}
		q := relevanceQuery{q: row[0], first: row[2], line: i + 1}
		if row[1] != "" {
			q.must = strings.Split(row[1], "|")
		}
		queries = append(queries, q)
	}
	if len(queries) < 60 {
		t.Fatalf("%d queries; the suite promises at least 60", len(queries))
	}

	// The same queries through a service that keeps totals and search plans
	// (JOBS_TOTALS_MEMO, the default where Redis is): asked twice, the second
	// answer is read with the kept plan; both must be the first's word for word.
	bus, v, _ := busWithChanges(t, relevanceRedis)
	rdbFlush(t, relevanceRedis)
	if err := v.Ensure(context.Background(), scopes.Jobs, scopes.JobsBulk); err != nil {
		t.Fatal(err)
	}
	kept := appOn(bus, true)

	var recall, rr float64
	found := 0
	for _, q := range queries {
		path := "/v2/jobs?per_page=50&q=" + url.QueryEscape(q.q)
		r := do(t, appPaged, "GET", path, "", &key)
		if r.Status != 200 {
			t.Errorf("queries.tsv:%d %q: %d %s", q.line, q.q, r.Status, r.Body)
			continue
		}
		for _, round := range []string{"counted", "kept"} {
			if k := do(t, kept, "GET", path, "", &key); k.Status != 200 || !bytes.Equal(k.Env.Data, r.Env.Data) {
				t.Errorf("queries.tsv:%d %q with the plan %s: %d %s, want %s", q.line, q.q, round, k.Status, k.Body, r.Body)
			}
		}
		var d struct {
			Jobs []struct {
				Title string `json:"title"`
			} `json:"jobs"`
			Total int `json:"total"`
		}
		r.data(t, &d)
		rank := map[string]int{}
		var titles []string
		for i, j := range d.Jobs {
			if _, ok := rank[j.Title]; !ok {
				rank[j.Title] = i + 1
			}
			titles = append(titles, j.Title)
		}
		if *relevanceDump {
			fmt.Printf("%-32q %v\n", q.q, titles)
		}
		if d.Total != len(d.Jobs) {
			t.Errorf("queries.tsv:%d %q: total %d, %d jobs listed", q.line, q.q, d.Total, len(d.Jobs))
		}
		if q.first == "-" {
			if len(titles) > 0 {
				t.Errorf("queries.tsv:%d %q must find nothing, found %q", q.line, q.q, titles)
			}
			if len(titles) == 0 {
				recall, rr, found = recall+1, rr+1, found+1
			}
			continue
		}
		hit := 0
		for _, m := range q.must {
			if _, ok := rank[m]; ok {
				hit++
			} else {
				t.Errorf("queries.tsv:%d %q did not find %q (found %q)", q.line, q.q, m, titles)
			}
		}
		recall += float64(hit) / float64(len(q.must))
		best := q.first
		if best == "" {
			best = q.must[0]
		}
		if p, ok := rank[best]; ok {
			rr += 1 / float64(p)
		}
		if q.first != "" && rank[q.first] != 1 {
			t.Errorf("queries.tsv:%d %q: %q ranked %d, want first (got %q)", q.line, q.q, q.first, rank[q.first], titles)
		}
		if hit == len(q.must) {
			found++
		}
	}
	n := float64(len(queries))
	// make test prints this line (see the Makefile's relevance step).
	fmt.Printf("relevance: %d queries, %d complete, recall %.3f, MRR %.3f\n", len(queries), found, recall/n, rr/n)
}
