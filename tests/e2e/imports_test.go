package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// importJob is a create body of a trusted importer's job in Lisbon.
func importJob(title string, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"title":%q,"company":"Tejo Hotels","description":"<p>Front desk and events.</p>","job_type":"parttime","tags":"hospitality","city_name":"Lisbon"%s}`,
		title, extra)
}

// getPage is GET of an HTML page, which the API document does not describe.
func getPage(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, "GET", s.gateway+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

var ldRE = regexp.MustCompile(`(?s)<script type="application/ld\+json">(.*?)</script>`)

// How a job pays and where it is worked, through the gateway: create with
// salary_period and workplace_type (and the old is_remote alone), list and
// filter, the detail, the public page's JSON-LD, and 422s naming the field.
func TestWorkplaceAndSalaryPeriodThroughGateway(t *testing.T) {
	imp := key(t, importerKey)
	tag := randomHex(4)
	post := func(body string) jobResult {
		t.Helper()
		r := call(t, "POST", s.gateway+"/v2/jobs", imp, body)
		var job jobResult
		r.into(t, &job)
		if r.status != 201 || job.Status != "active" {
			t.Fatalf("create: %d %s", r.status, r.raw)
		}
		return job
	}
	hourly := post(importJob("Night porter "+tag, `"salary_period":"hour","workplace_type":"on_site","sal_min":14,"sal_max":18,"currency":"EUR"`))
	hybrid := post(importJob("Revenue manager "+tag, `"workplace_type":"hybrid","sal_min":38000,"currency":"EUR"`))
	remote := post(importJob("Reservations agent "+tag, `"is_remote":1,"sal_min":2500,"sal_max":2800,"salary_period":"month","currency":"EUR"`))

	type item struct {
		ID            int64  `json:"id_job"`
		IsRemote      bool   `json:"is_remote"`
		SalaryPeriod  string `json:"salary_period"`
		WorkplaceType string `json:"workplace_type"`
	}
	listIDs := func(query string) map[int64]item {
		t.Helper()
		r := call(t, "GET", s.gateway+"/v2/jobs?q="+url.QueryEscape(tag)+"&"+query, imp, "")
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", query, r.status, r.raw)
		}
		var l struct {
			Jobs []item `json:"jobs"`
		}
		r.into(t, &l)
		out := map[int64]item{}
		for _, j := range l.Jobs {
			out[j.ID] = j
		}
		return out
	}
	all := listIDs("")
	for id, want := range map[int64]item{
		hourly.JobID: {hourly.JobID, false, "hour", "on_site"},
		hybrid.JobID: {hybrid.JobID, false, "year", "hybrid"},
		remote.JobID: {remote.JobID, true, "month", "remote"},
	} {
		if all[id] != want {
			t.Fatalf("listed %d: %+v, want %+v", id, all[id], want)
		}
	}
	for query, want := range map[string][]int64{
		"remote=1":               {remote.JobID},
		"workplace_type=hybrid":  {hybrid.JobID},
		"workplace_type=on_site": {hourly.JobID},
		// A year's: 18 an hour is 37,440, 2,800 a month 33,600.
		"currency=EUR&salary_min=33000":          {hourly.JobID, hybrid.JobID, remote.JobID},
		"currency=EUR&salary_min=37000":          {hourly.JobID, hybrid.JobID},
		"currency=EUR&salary_min=37500":          {hybrid.JobID},
		"currency=EUR&salary_min=37000&remote=1": nil,
	} {
		got := listIDs(query)
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", query, got, want)
		}
		for _, id := range want {
			if _, ok := got[id]; !ok {
				t.Fatalf("%s: %v, want %v", query, got, want)
			}
		}
	}

	r := call(t, "GET", fmt.Sprintf("%s/v2/jobs/%d", s.gateway, hourly.JobID), imp, "")
	var d item
	r.into(t, &d)
	if r.status != 200 || d.SalaryPeriod != "hour" || d.WorkplaceType != "on_site" {
		t.Fatalf("detail: %d %s", r.status, r.raw)
	}

	for _, tc := range []struct {
		job      jobResult
		unit     string
		location string
	}{{hourly, "HOUR", ""}, {remote, "MONTH", "TELECOMMUTE"}} {
		u, err := url.Parse(*tc.job.ViewURL)
		if err != nil {
			t.Fatal(err)
		}
		res, b := getPage(t, u.Path)
		m := ldRE.FindSubmatch(b)
		if res.StatusCode != 200 || m == nil {
			t.Fatalf("page %s: %d", u.Path, res.StatusCode)
		}
		var ld struct {
			JobLocationType string `json:"jobLocationType"`
			BaseSalary      struct {
				Value struct {
					UnitText string `json:"unitText"`
				} `json:"value"`
			} `json:"baseSalary"`
		}
		if err := json.Unmarshal(m[1], &ld); err != nil {
			t.Fatal(err)
		}
		if ld.BaseSalary.Value.UnitText != tc.unit || ld.JobLocationType != tc.location {
			t.Fatalf("JSON-LD of %s: %s", u.Path, m[1])
		}
	}

	for body, detail := range map[string]string{
		importJob("Bad period "+tag, `"salary_period":"fortnight"`):            "salary_period must be one of",
		importJob("Bad place "+tag, `"workplace_type":"moon"`):                 "workplace_type must be one of",
		importJob("Conflict "+tag, `"workplace_type":"on_site","is_remote":1`): "workplace_type on_site conflicts with is_remote 1",
	} {
		r := callUndocumented(t, "POST", s.gateway+"/v2/jobs", imp, body)
		if r.status != 422 || !strings.Contains(string(r.env.Error.Details), detail) {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
}

// external_ref through the gateway: the importer's reference decides create
// or update, parallel creates with one reference make one job, and the
// views return it.
func TestExternalRefThroughGateway(t *testing.T) {
	imp := key(t, importerKey)
	ref := "e2e-" + randomHex(6)
	type result struct {
		JobID       int64   `json:"job_id"`
		Action      string  `json:"action"`
		ExternalRef *string `json:"external_ref"`
	}
	const n = 12
	results := make(chan result, n)
	for i := range n {
		go func() {
			body := importJob(fmt.Sprintf("Sommelier %d", i%2), `"external_ref":"`+ref+`"`)
			r := send(t, false, "POST", s.gateway+"/v2/jobs", imp, body)
			var res result
			if r.status == 201 {
				_ = json.Unmarshal(r.env.Data, &res)
			}
			results <- res
		}()
	}
	ids, created := map[int64]bool{}, 0
	for range n {
		res := <-results
		if res.JobID == 0 || res.ExternalRef == nil || *res.ExternalRef != ref {
			t.Fatalf("a parallel create failed: %+v", res)
		}
		ids[res.JobID] = true
		if res.Action == "created" {
			created++
		}
	}
	if len(ids) != 1 || created != 1 {
		t.Fatalf("%d jobs, %d created", len(ids), created)
	}
	var id int64
	for id = range ids {
	}
	r := call(t, "POST", s.gateway+"/v2/jobs", imp, importJob("Head sommelier", `"external_ref":"`+ref+`"`))
	var upd result
	r.into(t, &upd)
	if r.status != 201 || upd.JobID != id || upd.Action != "updated" {
		t.Fatalf("update by reference: %d %s", r.status, r.raw)
	}
	r = call(t, "GET", fmt.Sprintf("%s/v2/jobs/%d", s.gateway, id), imp, "")
	var d struct {
		Title       string `json:"title"`
		ExternalRef string `json:"external_ref"`
	}
	r.into(t, &d)
	if d.Title != "Head sommelier" || d.ExternalRef != ref {
		t.Fatalf("detail: %s", r.raw)
	}
}

type batchRow struct {
	Index       *int     `json:"index"`
	ExternalRef string   `json:"external_ref"`
	Action      string   `json:"action"`
	JobID       *int64   `json:"job_id"`
	Status      *string  `json:"status"`
	Errors      []string `json:"errors"`
}

type batchData struct {
	DryRun  bool           `json:"dry_run"`
	Counts  map[string]int `json:"counts"`
	Results []batchRow     `json:"results"`
}

// batchBody is a batch of n jobs with refs prefix-i, the rows of bad broken.
func batchBody(prefix, mode string, dryRun bool, idx []int, bad map[int]string) string {
	rows := make([]string, 0, len(idx))
	for _, i := range idx {
		extra := fmt.Sprintf(`"external_ref":"%s-%d","salary_period":"hour","sal_min":11,"sal_max":14,"currency":"EUR"`, prefix, i)
		if b, ok := bad[i]; ok {
			extra += "," + b
		}
		rows = append(rows, importJob(fmt.Sprintf("%s porter %d", prefix, i), extra))
	}
	return fmt.Sprintf(`{"mode":%q,"dry_run":%t,"jobs":[%s]}`, mode, dryRun, strings.Join(rows, ","))
}

// The batch through the gateway: 37 bad rows among 100 (63 applied, 37
// errors naming index and field), a replay byte for byte, the write budget
// spent by rows / 10, replace closing the missing with a dry run equal to
// the run, and the batch's jobs in the changes feed like single posts.
func TestBatchThroughGateway(t *testing.T) {
	imp := key(t, importerKey)
	prefix := "bt" + randomHex(4)
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	all := make([]int, 100)
	for i := range all {
		all[i] = i
	}
	bad := map[int]string{}
	kinds := []string{`"salary_period":"fortnight"`, `"workplace_type":"moon"`, `"sal_min":30,"sal_max":20`, `"job_type":"gig"`, `"title":""`}
	for i := 0; len(bad) < 37; i++ {
		bad[(i*11+5)%100] = kinds[len(bad)%len(kinds)]
	}
	body := batchBody(prefix, "upsert", false, all, bad)

	// What the budget had before: a single write spends one unit.
	single := call(t, "POST", s.gateway+"/v2/jobs", imp, importJob(prefix+" budget probe", ""))
	before, _ := strconv.Atoi(single.header.Get("X-RateLimit-Remaining"))

	r := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, body, "Idempotency-Key", prefix)
	if r.status != 200 {
		t.Fatalf("batch: %d %.2000s", r.status, r.raw)
	}
	if after, _ := strconv.Atoi(r.header.Get("X-RateLimit-Remaining")); after != before-10 {
		t.Errorf("the batch of 100 spent %d writes, want 10", before-after)
	}
	var d batchData
	r.into(t, &d)
	if len(d.Results) != 100 || d.Counts["created"] != 63 || d.Counts["error"] != 37 {
		t.Fatalf("counts %v, %d results", d.Counts, len(d.Results))
	}
	created := map[int64]bool{}
	for i, row := range d.Results {
		if row.Index == nil || *row.Index != i || row.ExternalRef != fmt.Sprintf("%s-%d", prefix, i) {
			t.Fatalf("row %d: %+v", i, row)
		}
		field, isBad := bad[i]
		switch {
		case isBad:
			name := strings.Trim(strings.SplitN(field, ":", 2)[0], `"`)
			if row.Action != "error" || len(row.Errors) == 0 || !strings.HasPrefix(row.Errors[0], name+" ") {
				t.Fatalf("row %d (%s): %+v", i, field, row)
			}
		case row.Action != "created" || row.JobID == nil || row.Status == nil || *row.Status != "active":
			t.Fatalf("row %d: %+v", i, row)
		default:
			created[*row.JobID] = true
		}
	}
	replay := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, body, "Idempotency-Key", prefix)
	if replay.status != 200 || string(replay.raw) != string(r.raw) || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %q", replay.status, replay.header.Get("Idempotent-Replayed"))
	}

	// Replace with the first 50 (the bad ones still bad): a dry run first.
	first := all[:50]
	dryRun := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, batchBody(prefix, "replace", true, first, bad), "")
	var dry batchData
	dryRun.into(t, &dry)
	run := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, batchBody(prefix, "replace", false, first, bad), "")
	var applied batchData
	run.into(t, &applied)
	if dryRun.status != 200 || run.status != 200 || !dry.DryRun || applied.DryRun {
		t.Fatalf("replace: %d %d", dryRun.status, run.status)
	}
	goodLeft := 0
	for _, i := range all[50:] {
		if _, isBad := bad[i]; !isBad {
			goodLeft++
		}
	}
	if applied.Counts["closed"] < goodLeft || applied.Counts["unchanged"] != 50-countIn(bad, first) ||
		!sameJSON(t, dry.Counts, applied.Counts) || !sameJSON(t, dry.Results, applied.Results) {
		t.Fatalf("replace: dry %v, run %v (want %d closed at least)", dry.Counts, applied.Counts, goodLeft)
	}
	closed := map[int64]bool{}
	for _, row := range applied.Results {
		if row.Action == "closed" {
			closed[*row.JobID] = true
		}
	}

	// The changes feed carries the batch's creations and closings.
	seenCreated, seenClosed := map[int64]bool{}, map[int64]bool{}
	cursor := since
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		r := call(t, "GET", s.gateway+"/v2/jobs/changes?limit=200&since="+url.QueryEscape(cursor), imp, "")
		if r.status != 200 {
			t.Fatalf("changes: %d %s", r.status, r.raw)
		}
		var p struct {
			Changes []struct {
				IDJob int64 `json:"id_job"`
				Event struct {
					Type string `json:"type"`
				} `json:"event"`
			} `json:"changes"`
			NextCursor string `json:"next_cursor"`
		}
		r.into(t, &p)
		for _, c := range p.Changes {
			switch {
			case c.Event.Type == "job.created" && created[c.IDJob]:
				seenCreated[c.IDJob] = true
			case c.Event.Type == "job.closed" && closed[c.IDJob]:
				seenClosed[c.IDJob] = true
			}
		}
		cursor = p.NextCursor
		if len(seenCreated) == len(created) && len(seenClosed) == len(closed) {
			break
		}
		if len(p.Changes) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(seenCreated) != len(created) || len(seenClosed) != len(closed) {
		t.Fatalf("changes feed: %d of %d creations, %d of %d closings", len(seenCreated), len(created), len(seenClosed), len(closed))
	}
}

func countIn(bad map[int]string, idx []int) int {
	n := 0
	for _, i := range idx {
		if _, ok := bad[i]; ok {
			n++
		}
	}
	return n
}

// More than 100 jobs through the gateway: 202 with an operation, applied by
// the jobs service in the background; its GET shows the results once done.
func TestBatchOperationThroughGateway(t *testing.T) {
	imp := key(t, importerKey)
	prefix := "bo" + randomHex(4)
	all := make([]int, 500)
	for i := range all {
		all[i] = i
	}
	bad := map[int]string{}
	for i := 0; len(bad) < 37; i++ {
		bad[(i*13+7)%500] = `"salary_period":"fortnight"`
	}
	began := time.Now()
	r := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, batchBody(prefix, "upsert", false, all, bad))
	var op struct {
		OperationID string         `json:"operation_id"`
		Status      string         `json:"status"`
		URL         string         `json:"url"`
		Processed   int            `json:"processed"`
		Counts      map[string]int `json:"counts"`
		Results     []batchRow     `json:"results"`
	}
	r.into(t, &op)
	if r.status != 202 || op.Status != "pending" {
		t.Fatalf("post: %d %s", r.status, r.raw)
	}
	for deadline := time.Now().Add(30 * time.Second); op.Status != "done"; {
		if time.Now().After(deadline) {
			t.Fatalf("not done: %d of 500 processed", op.Processed)
		}
		time.Sleep(200 * time.Millisecond)
		g := call(t, "GET", s.gateway+op.URL, imp, "")
		if g.status != 200 {
			t.Fatalf("get: %d %s", g.status, g.raw)
		}
		g.into(t, &op)
	}
	t.Logf("500 rows through the gateway, posted to done: %s (%.0f rows/s, polled every 200 ms)",
		time.Since(began).Round(time.Millisecond), 500/time.Since(began).Seconds())
	if op.Counts["created"] != 463 || op.Counts["error"] != 37 || len(op.Results) != 500 {
		t.Fatalf("done: %v, %d results", op.Counts, len(op.Results))
	}
	for i, row := range op.Results {
		if *row.Index != i || (bad[i] != "") != (row.Action == "error") {
			t.Fatalf("row %d: %+v", i, row)
		}
	}
	if g := call(t, "GET", s.gateway+op.URL, key(t, liveKey), ""); g.status != 404 {
		t.Fatalf("another key's GET: %d", g.status)
	}
}

// batchOp is a batch operation's answer.
type batchOp struct {
	OperationID string         `json:"operation_id"`
	Status      string         `json:"status"`
	DryRun      bool           `json:"dry_run"`
	URL         string         `json:"url"`
	Processed   int            `json:"processed"`
	Counts      map[string]int `json:"counts"`
	Results     []batchRow     `json:"results"`
}

// runBatchOp posts a batch of more than 100 jobs and polls its operation
// until it is done.
func runBatchOp(t *testing.T, imp, body string) batchOp {
	t.Helper()
	r := call(t, "POST", s.gateway+"/v2/jobs/batch", imp, body)
	var op batchOp
	r.into(t, &op)
	if r.status != 202 || op.Status != "pending" {
		t.Fatalf("post: %d %.1000s", r.status, r.raw)
	}
	for deadline := time.Now().Add(60 * time.Second); op.Status != "done"; {
		if time.Now().After(deadline) {
			t.Fatalf("operation %s not done: %d processed", op.OperationID, op.Processed)
		}
		time.Sleep(100 * time.Millisecond)
		g := call(t, "GET", s.gateway+op.URL, imp, "")
		if g.status != 200 {
			t.Fatalf("get: %d %s", g.status, g.raw)
		}
		g.into(t, &op)
	}
	return op
}

// A dry run of 1 000 jobs (an operation) equals the applied diff: a replace
// over 1 000 jobs already there (37 bad rows among them) that drops 50,
// adds 50 and changes 100 answers, as a dry run, exactly what the same
// batch then does (a new job's job_id null), and applies nothing.
func TestBatchDryRunOperationEqualsTheApplied(t *testing.T) {
	// A key of its own: replace closes every job of the key with a
	// reference, the other tests' too.
	cmd := exec.CommandContext(context.Background(), filepath.Join(s.bin, "gateway-keys"), "create", "-name", "e2e dry run",
		"-scopes", "read,write", "-trusted-importer", "-rate-limit", "100000", "-json")
	cmd.Env = s.env
	out, err := cmd.Output()
	var k struct {
		Key string `json:"key"`
	}
	if err != nil || json.Unmarshal(out, &k) != nil || k.Key == "" {
		t.Fatalf("gateway-keys: %v %s", err, out)
	}
	imp := k.Key
	prefix := "bd" + randomHex(4)
	bad := map[int]string{}
	for i := 0; len(bad) < 37; i++ {
		bad[(i*29+3)%1050] = `"workplace_type":"moon"`
	}
	first := make([]int, 1000)
	for i := range first {
		first[i] = i
	}
	// The importer's earlier state: jobs 0..999. Applied for real.
	before := runBatchOp(t, imp, batchBody(prefix, "upsert", false, first, bad))
	if before.DryRun || before.Counts["error"] != countIn(bad, first) || before.Counts["created"] != 1000-countIn(bad, first) {
		t.Fatalf("first batch: %v", before.Counts)
	}
	// Then: 50..1049, rows 500..599 worked hybrid.
	next := make([]int, 1000)
	for i := range next {
		next[i] = 50 + i
	}
	changed := map[int]string{}
	for i, b := range bad {
		changed[i] = b
	}
	for i := 500; i < 600; i++ {
		if _, isBad := changed[i]; !isBad {
			changed[i] = `"workplace_type":"hybrid"`
		}
	}
	body := batchBody(prefix, "replace", true, next, changed)
	dry := runBatchOp(t, imp, body)
	if !dry.DryRun {
		t.Fatalf("the dry run's operation says dry_run false")
	}
	applied := runBatchOp(t, imp, strings.Replace(body, `"dry_run":true`, `"dry_run":false`, 1))
	if applied.DryRun {
		t.Fatalf("the batch's operation says dry_run true")
	}
	// What the diff is: the good rows dropped closed, the good new ones
	// created, the changed ones updated, the rest unchanged.
	want := map[string]int{"closed": 50 - countIn(bad, first[:50]), "created": 50 - countIn(bad, next[950:]),
		"error": countIn(bad, next)}
	want["updated"] = 100 - countIn(bad, next[450:550])
	want["unchanged"] = 1000 - want["created"] - want["updated"] - want["error"]
	if !sameJSON(t, applied.Counts, want) {
		t.Fatalf("applied %v, want %v", applied.Counts, want)
	}
	if !sameJSON(t, dry.Counts, applied.Counts) || len(dry.Results) != len(applied.Results) {
		t.Fatalf("dry run %v (%d results), applied %v (%d)", dry.Counts, len(dry.Results), applied.Counts, len(applied.Results))
	}
	for i := range dry.Results {
		d, a := dry.Results[i], applied.Results[i]
		if d.Action == "created" {
			if d.JobID != nil {
				t.Fatalf("dry row %d: a new job with an id: %+v", i, d)
			}
			d.JobID = a.JobID
		}
		if !sameJSON(t, d, a) {
			t.Fatalf("row %d: dry %+v, applied %+v", i, d, a)
		}
		if d.Index != nil && (*d.Index != i || bad[next[i]] != "" && (d.Action != "error" || !strings.HasPrefix(d.Errors[0], "workplace_type "))) {
			t.Fatalf("row %d: %+v", i, d)
		}
	}
}
