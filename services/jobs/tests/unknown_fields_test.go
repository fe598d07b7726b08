package tests

import (
	"slices"
	"strings"
	"testing"
)

// A field of a create body that the document does not name is refused with
// a 422 naming it, listed with every other problem, and nothing is stored;
// status, which the spec says has no effect, is still accepted.
func TestCreateRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	key := liveKey(180, 10)
	tests := []struct {
		name   string
		mutate func(b map[string]any)
		want   []string // exactly, in order
	}{
		{"create422UnknownField", func(b map[string]any) { b["salary"] = 50000 }, []string{`unknown field "salary"`}},
		{"create422UnknownFieldsInNameOrder", func(b map[string]any) { b["zip"] = "10115"; b["remote"] = true },
			[]string{`unknown field "remote"`, `unknown field "zip"`}},
		{"create422NamesAreCaseSensitive", func(b map[string]any) { b["Title"] = b["title"]; delete(b, "title") },
			[]string{`unknown field "Title"`, "title is required"}},
		{"create422UnknownWithEveryOtherProblem", func(b map[string]any) { b["company"] = 5; b["job_type"] = "gig"; b["foo"] = nil },
			[]string{"company must be a string", `unknown field "foo"`, "company is required", "job_type must be one of fulltime, parttime, freelance, internship"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			title := "Unknown field " + tc.name
			b := jobBody(title, 1)
			tc.mutate(b)
			r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key)
			if r.Status != 422 || r.Env.Error == nil || r.Env.Error.Code != "validation_error" || r.Env.Error.Message != "Validation failed" {
				t.Fatalf("want 422 validation_error, got %d %s", r.Status, r.Body)
			}
			if got := r.Env.Problems(t); !slices.Equal(got, tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			var n int
			if err := pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE title = $1`, title).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d jobs stored (%v)", n, err)
			}
		})
	}
	t.Run("create201StatusHasNoEffect", func(t *testing.T) {
		t.Parallel()
		b := jobBody("Unknown field status", 1)
		b["status"] = "expired"
		if cr := create(t, liveKey(181, 11), b); cr.Status != "draft" {
			t.Fatalf("status %q, want draft", cr.Status)
		}
	})
	// The refusal comes before the key is claimed: the corrected body goes
	// through under the same Idempotency-Key.
	t.Run("create422ThenCorrectedUnderTheSameKey", func(t *testing.T) {
		t.Parallel()
		b := jobBody("Unknown field idempotent", 1)
		b["colour"] = "blue"
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key, "Idempotency-Key", "unknown-fields-1")
		if r.Status != 422 || !r.hasDetail(`unknown field "colour"`) {
			t.Fatalf("want 422, got %d %s", r.Status, r.Body)
		}
		delete(b, "colour")
		r = do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key, "Idempotency-Key", "unknown-fields-1")
		if r.Status != 201 {
			t.Fatalf("corrected body: want 201, got %d %s", r.Status, r.Body)
		}
	})
}

// The transitions' body ({"job_id": n}) follows the same rule.
func TestTransitionRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	key := liveKey(182, 10)
	cr := create(t, key, jobBody("Unknown field transition", 1))
	body := `{"job_id":` + itoa(cr.JobID) + `,"hash":"` + cr.HashIdentifier + `"}`
	r := do(t, appFlat, "POST", "/v2/jobs/unpublish", body, &key)
	if r.Status != 422 || !slices.Equal(r.Env.Problems(t), []string{`unknown field "hash"`}) {
		t.Fatalf("want 422 naming hash, got %d %s", r.Status, r.Body)
	}
	if s := jobStatus(t, cr.JobID); s != cr.Status {
		t.Fatalf("a refused unpublish changed the job: %s -> %s", cr.Status, s)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"hash":"x"}`, `unknown field "hash"|job_id is required`},
		{`{"job_id":"1","x":1}`, `job_id must be an integer (a JSON number, not a string)|unknown field "x"`},
	} {
		r := do(t, appFlat, "POST", "/v2/jobs/unpublish", tc.body, &key)
		if want := strings.Split(tc.want, "|"); r.Status != 422 || !slices.Equal(r.Env.Problems(t), want) {
			t.Fatalf("%s: want 422 %q, got %d %s", tc.body, want, r.Status, r.Body)
		}
	}
	r = do(t, appFlat, "POST", "/v2/jobs/unpublish", `{"job_id":`+itoa(cr.JobID)+`}`, &key)
	if r.Status != 200 {
		t.Fatalf("unpublish: want 200, got %d %s", r.Status, r.Body)
	}
}
