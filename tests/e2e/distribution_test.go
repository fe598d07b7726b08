package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// The distribution record of GET /v2/jobs/{id_job} is the owner's only:
// another space's key and a read-only key reading the same (active) job
// get no trace of it, and the record follows the job's status.
func TestDistributionRecordIsTheOwnersOnly(t *testing.T) {
	owner, other, reader := key(t, proSpaceKey), key(t, plainSpaceKey), key(t, readOnlyKey)
	body := fmt.Sprintf(`{"title":"E2E Reach record %s","company":"Betahaus","description":"<p>Host</p>",
		"job_type":"parttime","tags":"community","city_name":"Berlin"}`, randomHex(3))
	created := call(t, "POST", s.gateway+"/v2/jobs", owner, body)
	var job jobResult
	created.into(t, &job)
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	if job.Status != "active" {
		if r := call(t, "POST", s.gateway+"/v2/jobs/publish", owner, fmt.Sprintf(`{"job_id":%d}`, job.JobID)); r.status != 200 {
			t.Fatalf("publish: %d %s", r.status, r.raw)
		}
	}
	path := fmt.Sprintf("%s/v2/jobs/%d", s.gateway, job.JobID)
	var d struct {
		Status       string
		Distribution *struct {
			Indexing *struct{ Type string } `json:"indexing"`
			ListedIn []string               `json:"listed_in"`
		}
	}
	r := call(t, "GET", path, owner, "")
	r.into(t, &d)
	if r.status != 200 || d.Distribution == nil || !strings.Contains(strings.Join(d.Distribution.ListedIn, " "), "sitemap feeds") {
		t.Fatalf("owner: %d %s", r.status, r.raw)
	}
	// notices are off in this suite (no credential): none is claimed
	if d.Distribution.Indexing != nil {
		t.Fatalf("owner: an Indexing API notice without a credential: %s", r.raw)
	}
	for name, k := range map[string]string{"another space's key": other, "a read-only key": reader} {
		r := call(t, "GET", path, k, "")
		if strings.Contains(string(r.raw), `"distribution"`) || strings.Contains(string(r.raw), `"listed_in"`) {
			t.Fatalf("%s sees the distribution record: %d %s", name, r.status, r.raw)
		}
	}
	// paused, it is listed nowhere
	if r := call(t, "POST", s.gateway+"/v2/jobs/pause", owner, fmt.Sprintf(`{"job_id":%d}`, job.JobID)); r.status != 200 {
		t.Fatalf("pause: %d %s", r.status, r.raw)
	}
	r = call(t, "GET", path, owner, "")
	d.Distribution = nil
	r.into(t, &d)
	if r.status != 200 || d.Distribution == nil || len(d.Distribution.ListedIn) != 0 {
		t.Fatalf("owner, paused: %d %s", r.status, r.raw)
	}
}
