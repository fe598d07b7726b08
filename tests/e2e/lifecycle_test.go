package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jobDetail is the part of GET /v2/jobs/{id_job} this test reads.
type jobDetail struct {
	ID          int64   `json:"id_job"`
	Description string  `json:"description"`
	Status      string  `json:"status"`
	IsPaid      bool    `json:"is_paid"`
	ViewURL     *string `json:"view_url"`
	EditURL     *string `json:"edit_url"`
	PaymentURL  *string `json:"payment_url"`
	Plan        struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	} `json:"plan"`
}

// A non-Pro space's job through its whole life, through the gateway only,
// with every other kind of key trying to see or touch it on the way.
func TestJobLifecycleThroughGateway(t *testing.T) {
	owner, other, reader := key(t, plainSpaceKey), key(t, proSpaceKey), key(t, readOnlyKey)
	body := fmt.Sprintf(`{"title":"E2E Lifecycle %s","company":"Betahaus","description":"<p>Welcome <em>members</em></p>",
		"job_type":"parttime","tags":"community","city_name":"Berlin"}`, randomHex(3))
	created := call(t, "POST", s.gateway+"/v2/jobs", owner, body)
	var job jobResult
	created.into(t, &job)
	if created.status != 201 || job.Status != "draft" {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	jobPath := fmt.Sprintf("%s/v2/jobs/%d", s.gateway, job.JobID)
	get := func(k string) (reply, jobDetail) {
		t.Helper()
		r := call(t, "GET", jobPath, k, "")
		var d jobDetail
		if r.status == 200 {
			r.into(t, &d)
		}
		return r, d
	}
	step := func(k, event string) reply {
		t.Helper()
		return call(t, "POST", s.gateway+"/v2/jobs/"+event, k, fmt.Sprintf(`{"job_id":%d}`, job.JobID))
	}
	wantStep := func(event, status, action string) {
		t.Helper()
		r := step(owner, event)
		var res struct{ Status, Action string }
		r.into(t, &res)
		if r.status != 200 || res.Status != status || res.Action != action {
			t.Fatalf("%s: %d %s", event, r.status, r.raw)
		}
	}

	// The draft: its owner reads it all; nobody else learns it exists (404, as
	// for an unknown id), another space included.
	r, d := get(owner)
	if r.status != 200 || d.Status != "draft" || d.Description != "<p>Welcome <em>members</em></p>" || d.EditURL == nil || d.ViewURL != nil {
		t.Fatalf("owner reads the draft: %d %s", r.status, r.raw)
	}
	if r, _ := get(other); r.status != 404 || r.env.Error.Code != "not_found" {
		t.Fatalf("another space reads the draft: %d %s", r.status, r.raw)
	}
	if r, _ := get(reader); r.status != 404 {
		t.Fatalf("a reader sees a draft: %d %s", r.status, r.raw)
	}
	if r := call(t, "GET", jobPath, "", ""); r.status != 401 {
		t.Fatalf("no key: %d", r.status)
	}
	if r := step(other, "publish"); r.status != 404 {
		t.Fatalf("another space publishes the draft: %d %s", r.status, r.raw)
	}
	if r := step(reader, "publish"); r.status != 403 {
		t.Fatalf("a read-only key publishes: %d %s", r.status, r.raw)
	}
	if r := step(owner, "pause"); r.status != 409 || r.env.Error.Code != "conflict" {
		t.Fatalf("pause a draft: %d %s", r.status, r.raw)
	}

	wantStep("publish", "active", "published")
	if !listed(t, owner, "city=berlin", job.JobID) {
		t.Fatal("published job not listed")
	}
	if r, _ := get(other); r.status != 403 || r.env.Error.Code != "forbidden" {
		t.Fatalf("another space reads the listed job: %d %s", r.status, r.raw)
	}
	if r, d := get(reader); r.status != 200 || d.EditURL != nil || d.ViewURL == nil {
		t.Fatalf("a reader reads the active job, without its poster's links: %d %s", r.status, r.raw)
	}
	wantStep("pause", "paused", "paused")
	if listed(t, owner, "city=berlin", job.JobID) {
		t.Fatal("paused job listed")
	}
	wantStep("resume", "active", "resumed")
	wantStep("close", "closed", "closed")
	if r := step(owner, "relist"); r.status != 409 {
		t.Fatalf("relist a closed job: %d %s", r.status, r.raw)
	}
	if listed(t, owner, "city=berlin", job.JobID) {
		t.Fatal("closed job listed")
	}

	// A paid plan: publish is refused with the way to pay.
	paid := call(t, "POST", s.gateway+"/v2/jobs", owner, strings.NewReplacer(`"community"`, `"community","id_plan":7`, "E2E Lifecycle", "E2E Premium").Replace(body))
	var pj jobResult
	paid.into(t, &pj)
	if paid.status != 201 || pj.Status != "draft" || pj.PaymentURL == nil {
		t.Fatalf("paid plan: %d %s", paid.status, paid.raw)
	}
	refused := call(t, "POST", s.gateway+"/v2/jobs/publish", owner, fmt.Sprintf(`{"job_id":%d}`, pj.JobID))
	var details struct {
		PaymentURL string `json:"payment_url"`
	}
	_ = json.Unmarshal(refused.env.Error.Details, &details)
	if refused.status != 409 || details.PaymentURL != *pj.PaymentURL {
		t.Fatalf("publish unpaid: %d %s", refused.status, refused.raw)
	}
}
