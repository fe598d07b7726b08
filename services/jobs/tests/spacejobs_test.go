package tests

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// The dashboard's list of a space's jobs: every status, newest first, with
// the transitions the state machine allows each now; only for service
// identities; another space's jobs never in it.
func TestInternalSpaceJobs(t *testing.T) {
	t.Parallel()
	app := newApp(false, dirURL)
	owner := liveKey(1795, 2795) // a non-Pro space: its jobs start as drafts
	other := liveKey(1796, 2796)
	var ids []int64
	for i := range 3 {
		r := do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody(fmt.Sprintf("Space Jobs Host %d", i), 1795)), &owner)
		var cr createResult
		r.data(t, &cr)
		if r.Status != 201 || cr.Status != "draft" {
			t.Fatalf("create %d: %d %+v", i, r.Status, cr)
		}
		ids = append(ids, cr.JobID)
	}
	do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Other Space Host", 1796)), &other)
	if r := do(t, app, "POST", "/v2/jobs/publish", fmt.Sprintf(`{"job_id":%d}`, ids[1]), &owner); r.Status != 200 {
		t.Fatalf("publish: %d", r.Status)
	}
	if r := do(t, app, "POST", "/v2/jobs/pause", fmt.Sprintf(`{"job_id":%d}`, ids[1]), &owner); r.Status != 200 {
		t.Fatalf("pause: %d", r.Status)
	}
	svc := &identity.Identity{Kind: identity.KindService, Service: "gateway"}
	r := do(t, app, "GET", "/internal/spaces/2795/jobs", "", svc)
	var got struct {
		Jobs []struct {
			ID         int64    `json:"id_job"`
			Status     string   `json:"status"`
			EditURL    string   `json:"edit_url"`
			PaymentURL *string  `json:"payment_url"`
			Actions    []string `json:"actions"`
		} `json:"jobs"`
	}
	r.data(t, &got)
	if r.Status != 200 || len(got.Jobs) != 3 {
		t.Fatalf("%d %+v", r.Status, got)
	}
	if got.Jobs[0].ID != ids[2] || got.Jobs[2].ID != ids[0] {
		t.Errorf("not newest first: %+v", got.Jobs)
	}
	want := map[int64][]string{
		ids[0]: {"publish", "unpublish"},
		ids[1]: {"resume", "close", "unpublish"},
		ids[2]: {"publish", "unpublish"},
	}
	for _, j := range got.Jobs {
		if !slices.Equal(j.Actions, want[j.ID]) || j.EditURL == "" {
			t.Errorf("job %d (%s): actions %v, want %v", j.ID, j.Status, j.Actions, want[j.ID])
		}
	}
	for _, id := range []*identity.Identity{&owner, nil} {
		if r := do(t, app, "GET", "/internal/spaces/2795/jobs", "", id); r.Status != 401 && r.Status != 403 {
			t.Errorf("a key's identity lists a space's jobs: %d", r.Status)
		}
	}
	if r := do(t, app, "GET", "/internal/spaces/0/jobs", "", svc); r.Status != 422 && r.Status != 404 {
		t.Errorf("space 0: %d", r.Status)
	}
}
