package tests

import (
	"net/http"
	"strings"
	"testing"
)

// salary_period and workplace_type end to end in the service: create,
// fingerprint update, list and detail views, the filters, the page and its
// JSON-LD (issue 46).
func TestWorkplaceAndSalaryPeriod(t *testing.T) {
	t.Parallel()
	key := liveKey(4600, 1046) // a Pro space: published at once
	const city = 4601

	hourly := jobBody("Barista by the hour", city)
	hourly["workplace_type"], hourly["salary_period"] = "on_site", "hour"
	hourly["sal_min"], hourly["sal_max"], hourly["currency"] = 15, 20, "EUR" // 41,600 a year at most
	hourlyJob := create(t, key, hourly)

	hybrid := jobBody("Community lead, hybrid", city)
	hybrid["workplace_type"] = "HYBRID" // any case, as job_type
	hybrid["sal_min"], hybrid["currency"] = 35000, "EUR"
	hybridJob := create(t, key, hybrid)

	legacy := jobBody("Remote host the old way", city)
	legacy["is_remote"] = 1 // no workplace_type: derived
	legacy["sal_min"], legacy["sal_max"], legacy["currency"] = 3000, 3500, "EUR"
	legacy["salary_period"] = "month" // 42,000 a year at most
	legacyJob := create(t, key, legacy)

	detail := func(id int64) map[string]any {
		t.Helper()
		r := do(t, appFlat, "GET", "/v2/jobs/"+itoa(id), "", &key)
		if r.Status != 200 {
			t.Fatalf("get %d: %d %s", id, r.Status, r.Body)
		}
		var d map[string]any
		r.data(t, &d)
		return d
	}
	for _, tc := range []struct {
		id             int64
		period, wt     string
		remote         bool
		salMin, salMax string
	}{
		{hourlyJob.JobID, "hour", "on_site", false, "15", "20"},
		{hybridJob.JobID, "year", "hybrid", false, "35000", "0"},
		{legacyJob.JobID, "month", "remote", true, "3000", "3500"},
	} {
		d := detail(tc.id)
		if d["salary_period"] != tc.period || d["workplace_type"] != tc.wt || d["is_remote"] != tc.remote ||
			d["sal_min"] != tc.salMin || d["sal_max"] != tc.salMax {
			t.Fatalf("job %d: %v", tc.id, d)
		}
	}

	ids := func(query string) map[int64]bool {
		t.Helper()
		r, l := list(t, "/v2/jobs?city=city-4601&"+query, key)
		if r.Status != 200 {
			t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
		}
		out := map[int64]bool{}
		for _, j := range l.Jobs {
			if _, ok := j["salary_period"].(string); !ok {
				t.Fatalf("list item without salary_period: %v", j)
			}
			if _, ok := j["workplace_type"].(string); !ok {
				t.Fatalf("list item without workplace_type: %v", j)
			}
			out[int64(j["id_job"].(float64))] = true
		}
		return out
	}
	want := func(query string, in ...int64) {
		t.Helper()
		got := ids(query)
		if len(got) != len(in) {
			t.Fatalf("%s: got %v, want %v", query, got, in)
		}
		for _, id := range in {
			if !got[id] {
				t.Fatalf("%s: got %v, want %v", query, got, in)
			}
		}
	}
	want("", hourlyJob.JobID, hybridJob.JobID, legacyJob.JobID)
	want("remote=1", legacyJob.JobID) // hybrid is not remote
	want("workplace_type=hybrid", hybridJob.JobID)
	want("workplace_type=remote", legacyJob.JobID)
	want("workplace_type=on_site", hourlyJob.JobID)
	// salary_min is a year's: 20 EUR an hour is 41,600, 3,500 a month 42,000.
	want("currency=EUR&salary_min=40000", hourlyJob.JobID, legacyJob.JobID)
	want("currency=EUR&salary_min=41601", legacyJob.JobID)
	want("currency=EUR&salary_min=30000", hourlyJob.JobID, hybridJob.JobID, legacyJob.JobID)
	if r := do(t, appFlat, "GET", "/v2/jobs?workplace_type=moon", "", &key); r.Status != 422 || !r.hasDetail("workplace_type must be one of") {
		t.Fatalf("bad filter: %d %s", r.Status, r.Body)
	}

	// A fingerprint update changes them like any field.
	hourly["salary_period"], hourly["workplace_type"] = "day", "hybrid"
	hourly["sal_min"], hourly["sal_max"] = 120, 160
	if cr := create(t, key, hourly); cr.JobID != hourlyJob.JobID || cr.Action != "updated" {
		t.Fatalf("update: %+v", cr)
	}
	if d := detail(hourlyJob.JobID); d["salary_period"] != "day" || d["workplace_type"] != "hybrid" || d["is_remote"] != false {
		t.Fatalf("updated: %v", d)
	}

	// The page and its JSON-LD.
	for _, tc := range []struct {
		cr       createResult
		unit     string
		text     string
		location string
	}{
		{hourlyJob, "DAY", "120–160 EUR a day", "(hybrid)"},
		{legacyJob, "MONTH", "3,000–3,500 EUR a month", "Remote"},
	} {
		r := pageDo(t, appPages(), http.MethodGet, pagePath(t, *tc.cr.ViewURL), nil)
		if r.Status != 200 || !strings.Contains(r.Body, tc.text) || !strings.Contains(r.Body, tc.location) {
			t.Fatalf("page %d: %d, want %q and %q\n%.3000s", tc.cr.JobID, r.Status, tc.text, tc.location, r.Body)
		}
		ld := readLD(t, r.Body)
		if ld.BaseSalary == nil || ld.BaseSalary.Value.UnitText != tc.unit {
			t.Fatalf("JSON-LD salary of %d: %+v", tc.cr.JobID, ld.BaseSalary)
		}
		if remote := tc.location == "Remote"; remote != (ld.JobLocationType == "TELECOMMUTE") || remote == (ld.JobLocation != nil) {
			t.Fatalf("JSON-LD location of %d: %q %+v", tc.cr.JobID, ld.JobLocationType, ld.JobLocation)
		}
	}
}

// Wrong values are 422 naming the field, never a 500; is_remote and
// workplace_type that disagree are refused naming both.
func TestWorkplaceAndSalaryPeriod422(t *testing.T) {
	t.Parallel()
	key := liveKey(4610, 1046)
	for _, tc := range []struct {
		name   string
		mutate func(map[string]any)
		detail string
	}{
		{"create422SalaryPeriod", func(b map[string]any) { b["salary_period"] = "fortnight" }, "salary_period must be one of hour, day, week, month, year"},
		{"create422SalaryPeriodType", func(b map[string]any) { b["salary_period"] = 7 }, "salary_period must be a string"},
		{"create422WorkplaceType", func(b map[string]any) { b["workplace_type"] = "moon" }, "workplace_type must be one of on_site, hybrid, remote"},
		{"create422WorkplaceConflict", func(b map[string]any) { b["workplace_type"], b["is_remote"] = "hybrid", 1 }, "workplace_type hybrid conflicts with is_remote 1"},
		{"create422WorkplaceConflictRemote", func(b map[string]any) { b["workplace_type"], b["is_remote"] = "remote", false }, "workplace_type remote conflicts with is_remote 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := jobBody("Refused "+tc.name, 4602)
			tc.mutate(b)
			r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key)
			if r.Status != 422 || !r.hasDetail(tc.detail) {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	// Agreeing values are fine.
	b := jobBody("Agreeing remote", 4602)
	b["workplace_type"], b["is_remote"] = "remote", 1
	create(t, key, b)
}
