package tests

import (
	"strings"
	"sync"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// An importer's external_ref decides create or update instead of the
// fingerprint, within its owner's jobs, and every job view returns it.
func TestExternalRef(t *testing.T) {
	t.Parallel()
	space := liveKey(4700, 1047) // a Pro space
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4701, TrustedImporter: true, Scopes: []string{"jobs:write"}}

	b := jobBody("Housekeeper", 4701)
	b["external_ref"] = "  hk-1 " // trimmed
	first := create(t, space, b)
	if first.Action != "created" {
		t.Fatalf("first: %+v", first)
	}
	// The same reference reading otherwise (title, city, link) is the same job.
	b2 := jobBody("Head housekeeper", 4702)
	b2["external_ref"], b2["external_url"] = "hk-1", "https://hotel.example/jobs/1"
	second := create(t, space, b2)
	if second.JobID != first.JobID || second.Action != "updated" || !strings.Contains(second.Message, "external_ref") {
		t.Fatalf("second: %+v", second)
	}
	r := do(t, appFlat, "GET", "/v2/jobs/"+itoa(first.JobID), "", &space)
	var d map[string]any
	r.data(t, &d)
	if d["external_ref"] != "hk-1" || d["title"] != "Head housekeeper" || d["city_slug"] != "city-4702" {
		t.Fatalf("detail: %v", d)
	}
	if _, l := list(t, "/v2/jobs?city=city-4702", space); len(l.Jobs) != 1 || l.Jobs[0]["external_ref"] != "hk-1" {
		t.Fatalf("list: %v", l.Jobs)
	}

	// Another reference that reads the same is another job; a job without
	// one is matched by its fingerprint among the jobs without one.
	b3 := jobBody("Head housekeeper", 4702)
	b3["external_ref"], b3["external_url"] = "hk-2", "https://hotel.example/jobs/1"
	if third := create(t, space, b3); third.JobID == first.JobID || third.Action != "created" {
		t.Fatalf("another reference: %+v", third)
	}
	plain := jobBody("Head housekeeper", 4702)
	plain["external_url"] = "https://hotel.example/jobs/1"
	p1 := create(t, space, plain)
	if p2 := create(t, space, plain); p1.Action != "created" || p2.JobID != p1.JobID || p2.Action != "updated" {
		t.Fatalf("fingerprint: %+v %+v", p1, p2)
	}
	if r, l := list(t, "/v2/jobs?city=city-4702", space); r.Status != 200 || len(l.Jobs) != 3 {
		t.Fatalf("three jobs expected: %v", l.Jobs)
	}

	// Another owner's same reference is its own job; a platform's
	// reference is one job across the spaces it posts into.
	pb := jobBody("Housekeeper", 4701)
	pb["external_ref"], pb["id_space"] = "hk-1", 1048
	inA := create(t, platform, pb)
	pb["id_space"] = 1049
	inB := create(t, platform, pb)
	if inA.JobID == first.JobID || inB.JobID != inA.JobID || inB.Action != "updated" {
		t.Fatalf("platform: %+v %+v (space's %d)", inA, inB, first.JobID)
	}
	var spaceID int64
	if err := pool.QueryRow(bgContext, `SELECT space_id FROM jobs WHERE id = $1`, inA.JobID).Scan(&spaceID); err != nil || spaceID != 1049 {
		t.Fatalf("moved to space %d: %v", spaceID, err)
	}

	for _, tc := range []struct {
		ref    any
		detail string
	}{
		{"", "external_ref must not be empty"},
		{"   ", "external_ref must not be empty"},
		{strings.Repeat("é", 201), "external_ref must be at most 200 characters"},
		{"a\x01b", "external_ref must not contain control"},
		{42, "external_ref must be a string"},
	} {
		bad := jobBody("Bad ref", 4701)
		bad["external_ref"] = tc.ref
		if r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, bad), &space); r.Status != 422 || !r.hasDetail(tc.detail) {
			t.Fatalf("%q: %d %s", tc.ref, r.Status, r.Body)
		}
	}
	ok := jobBody("Long ref", 4701)
	ok["external_ref"] = strings.Repeat("é", 200)
	create(t, space, ok)
}

// Parallel creates with one external_ref make one job.
func TestConcurrentExternalRef(t *testing.T) {
	t.Parallel()
	key := liveKey(4710, 1050)
	var mu sync.Mutex
	ids := map[int64]int{}
	actions := map[string]int{}
	fifty(func(i int) {
		b := jobBody("Racing reference", 4710)
		b["external_ref"] = "race-1"
		b["tags"] = "race, n" + itoa(int64(i%3)) // some differ: real updates race too
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key)
		if r.Status != 201 {
			t.Errorf("%d %s", r.Status, r.Body)
			return
		}
		var cr createResult
		r.data(t, &cr)
		mu.Lock()
		ids[cr.JobID]++
		actions[cr.Action]++
		mu.Unlock()
	})
	if len(ids) != 1 || actions["created"] != 1 || actions["updated"] != 49 {
		t.Fatalf("ids %v actions %v", ids, actions)
	}
	var n int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE city_id = 4710`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d jobs", n)
	}
}
