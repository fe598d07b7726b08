package tests

import (
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
)

var embedData = regexp.MustCompile(`(?m)^  var data = (.*);$`)

// TestReachShowsActiveJobsOnly walks random transitions of a space's jobs
// (the API's events, and a date passing before the sweep) and after each
// one holds every surface to the truth in the database: the jobs feeds in
// every format, the sitemap, both aggregators' feeds and the embed list
// exactly the jobs that are active, never another. Not parallel: the
// sitemap and the aggregators' feeds list every job.
func TestReachShowsActiveJobsOnly(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 37))
	key := liveKey(480, 1480) // space pro-1480
	const city = 1480
	var ids []int64
	for i := range 8 {
		b := jobBody("Walk "+itoa(int64(i)), city)
		ids = append(ids, create(t, key, b).JobID)
	}
	// A draft of a non-Pro space in the same city is never shown either.
	create(t, liveKey(481, 2480), jobBody("Walk draft", city))
	events := []string{"pause", "resume", "close", "unpublish", "relist", "publish"}
	applied := 0
	for step := range 30 {
		id := ids[rnd.IntN(len(ids))]
		if rnd.IntN(6) == 0 {
			// The job's date passes; the sweep has not run.
			if _, err := pool.Exec(bgContext, `UPDATE jobs SET expiration_date = now() - interval '1 second' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		} else {
			ev := events[rnd.IntN(len(events))]
			r, _, _ := transition(t, key, ev, id)
			if r.Status != 200 && r.Status != 409 {
				t.Fatalf("step %d: %s %d: %d %s", step, ev, id, r.Status, r.Body)
			}
			if r.Status == 200 {
				applied++
			}
		}
		checkSurfaces(t, step, ids)
	}
	if applied < 5 {
		t.Fatalf("only %d of 30 steps moved a job: the walk tested little", applied)
	}
	t.Logf("%d transitions applied", applied)
}

// checkSurfaces holds every surface to the active jobs among ids.
func checkSurfaces(t *testing.T, step int, ids []int64) {
	t.Helper()
	mine := map[string]bool{}
	for _, id := range ids {
		var slug string
		if err := pool.QueryRow(bgContext, `SELECT slug FROM jobs WHERE id = $1`, id).Scan(&slug); err != nil {
			t.Fatal(err)
		}
		mine[baseURL+"/jobs/"+slug+"-"+itoa(id)] = true
	}
	all := activePages(t)
	want := map[string]bool{}
	for p := range mine {
		if all[p] {
			want[p] = true
		}
	}
	// Of a surface's pages, those of ids must be exactly the active ones.
	hold := func(what string, pages []string) {
		t.Helper()
		var got []string
		for _, p := range pages {
			if mine[p] {
				got = append(got, p)
			}
		}
		checkListsActive(t, what, got, want)
	}
	for _, format := range []string{"rss", "atom", "json"} {
		r := do(t, appFlat, "GET", "/v2/vine/jobs?format="+format+"&city=city-1480&limit=50", "", &public)
		f, err := webtest.CheckFeed(format, r.Body)
		if err != nil {
			t.Fatalf("step %d %s: %v", step, format, err)
		}
		var pages []string
		for _, it := range f.Items {
			page, ok := refPage(it.Link, "feed")
			if !ok {
				t.Fatalf("step %d %s feed link %q: not ?ref=feed", step, format, it.Link)
			}
			pages = append(pages, page)
		}
		hold("step "+itoa(int64(step))+" "+format+" feed", pages)
	}
	hold("step "+itoa(int64(step))+" sitemap", sitemapURLs(t))
	for _, format := range []string{reachapp.FormatIndeed, reachapp.FormatJooble} {
		r := do(t, appReach, "GET", "/feeds/jobs.xml?format="+format, "", &public)
		jobs, err := checkAggregator(format, r.Body)
		if err != nil {
			t.Fatalf("step %d %s: %v", step, format, err)
		}
		hold("step "+itoa(int64(step))+" "+format, aggregatorPages(t, format, jobs))
	}
	r := do(t, appReach, "GET", "/embed/jobs.js?space=pro-1480", "", &public)
	m := embedData.FindSubmatch(r.Body)
	if r.Status != 200 || m == nil {
		t.Fatalf("step %d embed: %d %s", step, r.Status, r.Body)
	}
	var data struct{ Jobs []struct{ URL string } }
	if err := json.Unmarshal(m[1], &data); err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, j := range data.Jobs {
		if u, err := url.Parse(j.URL); err != nil || !strings.HasPrefix(j.URL, baseURL) || u.Host == "" {
			t.Fatalf("embed url %q", j.URL)
		}
		// The embed's links say where the view comes from (job statistics).
		page, query, _ := strings.Cut(j.URL, "?")
		if query != "ref=embed" {
			t.Fatalf("embed url %q: not ?ref=embed", j.URL)
		}
		pages = append(pages, page)
	}
	hold("step "+itoa(int64(step))+" embed", pages)
}
