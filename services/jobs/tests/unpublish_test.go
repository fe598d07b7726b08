package tests

import (
	"strings"
	"testing"
)

func TestUnpublish(t *testing.T) {
	t.Parallel()
	key := liveKey(300, 1100)
	cr := create(t, key, jobBody("Unpublish Me", 1300))
	if cr.Status != "active" {
		t.Fatalf("%+v", cr)
	}
	listed := func() int {
		r := do(t, appFlat, "GET", "/v2/jobs?city=city-1300", "", &key)
		var d struct{ Total int }
		r.data(t, &d)
		return d.Total
	}
	if listed() != 1 {
		t.Fatal("job not listed")
	}
	tests := []struct {
		name   string
		key    int64
		space  int64
		body   string
		status int
		action string
		detail string
	}{
		{"unpublish403OtherSpace", 301, 11, `{"job_id":` + itoa(cr.JobID) + `}`, 403, "", ""},
		{"unpublish403KeyWithoutSpace", 302, 0, `{"job_id":` + itoa(cr.JobID) + `}`, 403, "", ""},
		{"unpublish404Missing", 300, 1100, `{"job_id":999999999}`, 404, "", ""},
		{"unpublish422Missing", 300, 1100, `{}`, 422, "", "job_id is required"},
		{"unpublish422NotInteger", 300, 1100, `{"job_id":"abc"}`, 422, "", "job_id must be an integer"},
		{"unpublish422NumericString", 300, 1100, `{"job_id":"` + itoa(cr.JobID) + `"}`, 422, "", "job_id must be an integer (a JSON number, not a string)"},
		{"unpublish422Fraction", 300, 1100, `{"job_id":1.5}`, 422, "", "job_id must be an integer"},
		{"unpublish422Bool", 300, 1100, `{"job_id":true}`, 422, "", "job_id must be an integer"},
		{"unpublish422Negative", 300, 1100, `{"job_id":-3}`, 422, "", "job_id must be a positive integer"},
		{"unpublish400BadJSON", 300, 1100, `{"job_id":`, 400, "", ""},
		{"unpublish200Unpublished", 300, 1100, `{"job_id":` + itoa(cr.JobID) + `}`, 200, "unpublished", ""},
		{"unpublish200AlreadyUnpublished", 300, 1100, `{"job_id":` + itoa(cr.JobID) + `}`, 200, "already_unpublished", ""},
	}
	for _, tc := range tests { // in order: the state carries over
		t.Run(tc.name, func(t *testing.T) {
			id := liveKey(tc.key, tc.space)
			r := do(t, appFlat, "POST", "/v2/jobs/unpublish", tc.body, &id)
			if r.Status != tc.status {
				t.Fatalf("want %d got %d %s", tc.status, r.Status, r.Body)
			}
			if tc.detail != "" && !r.hasDetail(tc.detail) {
				t.Fatalf("details %s", r.Body)
			}
			if tc.action != "" {
				var res struct {
					JobID  int64  `json:"job_id"`
					Status string `json:"status"`
					Action string `json:"action"`
				}
				r.data(t, &res)
				if res.Action != tc.action || res.Status != "expired" || res.JobID != cr.JobID {
					t.Fatalf("%+v", res)
				}
			}
		})
	}
	if listed() != 0 {
		t.Fatal("unpublished job still listed")
	}
	var status string
	_ = pool.QueryRow(bgContext, `SELECT status FROM jobs WHERE id = $1`, cr.JobID).Scan(&status)
	if status != "expired" {
		t.Fatalf("record status %q", status)
	}

	t.Run("unpublish200ClosedIsAlreadyUnpublished", func(t *testing.T) {
		c2 := create(t, key, jobBody("Closed Job", 1300))
		_, _ = pool.Exec(bgContext, `UPDATE jobs SET status = 'closed' WHERE id = $1`, c2.JobID)
		r := do(t, appFlat, "POST", "/v2/jobs/unpublish", `{"job_id":`+itoa(c2.JobID)+`}`, &key)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"action":"already_unpublished"`) || !strings.Contains(string(r.Body), `"status":"closed"`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("unpublish200OwnJobOfKeyWithoutSpace", func(t *testing.T) {
		importer := liveKey(303, 0)
		importer.TrustedImporter = true
		c3 := create(t, importer, jobBody("Importer Job", 1300))
		r := do(t, appFlat, "POST", "/v2/jobs/unpublish", `{"job_id":`+itoa(c3.JobID)+`}`, &importer)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"action":"unpublished"`) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}
