package tests

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// eventRow is a job_events row as the tests look at it.
type eventRow struct {
	Type, Status, Prev string
	Version            int64
}

// eventsOf are a job's events in the order they were written.
func eventsOf(t *testing.T, jobID int64) []eventRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT type, status, prev_status, version FROM job_events WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []eventRow
	for rows.Next() {
		var e eventRow
		if err := rows.Scan(&e.Type, &e.Status, &e.Prev, &e.Version); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func eventTypes(evs []eventRow) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// checkVersions: a job's versions count up by one from 1, events of one
// change (a payment that publishes) sharing theirs.
func checkVersions(t *testing.T, evs []eventRow) {
	t.Helper()
	for i, e := range evs {
		if i == 0 && e.Version != 1 || i > 0 && e.Version != evs[i-1].Version && e.Version != evs[i-1].Version+1 {
			t.Fatalf("versions do not count up: %+v", evs)
		}
	}
}

// Every change of the state machine writes its event in its transaction:
// create, every transition, a payment; an answer that changes nothing
// (already_…, an unchanged re-post, a replayed payment) writes none.
func TestEventsOfTheLifecycle(t *testing.T) {
	t.Parallel()
	pro := liveKey(3500, 1350)
	body := jobBody("Events Host", 3500)
	cr := create(t, pro, body)
	create(t, pro, body) // unchanged re-post
	for _, ev := range []string{"pause", "pause", "resume", "publish", "close", "close"} {
		if r, _, _ := transition(t, pro, ev, cr.JobID); r.Status != 200 {
			t.Fatalf("%s: %d %s", ev, r.Status, r.Body)
		}
	}
	evs := eventsOf(t, cr.JobID)
	if got, want := eventTypes(evs), []string{"job.created", "job.paused", "job.resumed", "job.closed"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	checkVersions(t, evs)
	if evs[1].Prev != "active" || evs[1].Status != "paused" {
		t.Fatalf("pause event: %+v", evs[1])
	}

	nonPro := liveKey(3501, 2350)
	draft := create(t, nonPro, jobBody("Events Draft", 3500))
	changed := jobBody("Events Draft", 3500)
	changed["description"] = "<p>Now with more community</p>"
	create(t, nonPro, changed)
	for _, ev := range []string{"publish", "unpublish", "unpublish"} {
		transition(t, nonPro, ev, draft.JobID)
	}
	if got, want := eventTypes(eventsOf(t, draft.JobID)), []string{"job.created", "job.updated", "job.published", "job.unpublished"}; !slices.Equal(got, want) {
		t.Fatalf("draft's events %v, want %v", got, want)
	}

	// A payment publishes a paid plan's draft: job.paid, then job.published,
	// one version; the provider's replay writes nothing.
	paid := paidDraft(t, liveKey(3502, 2351), "Events Paid Host", 3500)
	bus := newBus(baseURL, dirURL)
	pay := jobbus.Payment{JobID: paid.JobID, Provider: "invoice", Reference: "EV-" + randomID(), Amount: 4900, Currency: "EUR"}
	for range 2 {
		if _, err := bus.Pay(context.Background(), pay); err != nil {
			t.Fatal(err)
		}
	}
	evs = eventsOf(t, paid.JobID)
	if got, want := eventTypes(evs), []string{"job.created", "job.paid", "job.published"}; !slices.Equal(got, want) {
		t.Fatalf("paid draft's events %v, want %v", got, want)
	}
	if evs[1].Version != 2 || evs[2].Version != 2 {
		t.Fatalf("a payment's events share the change's version: %+v", evs)
	}
}

// change is an entry of GET /v2/jobs/changes as the tests read it.
type change struct {
	IDJob  int64   `json:"id_job"`
	Status string  `json:"status"`
	Title  *string `json:"title"`
	Event  struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Version int64  `json:"version"`
	} `json:"event"`
	EditURL *string `json:"edit_url"`
}

type changesPage struct {
	Changes    []change `json:"changes"`
	NextCursor string   `json:"next_cursor"`
}

// follow reads the feed from since as a mirror does, page by page, until
// it has seen every job of want (the horizon is the whole server's, which
// other tests' transactions hold back a moment) or a while has passed.
func follow(t *testing.T, id identity.Identity, since string, limit int, want ...int64) ([]change, string) {
	t.Helper()
	var all []change
	seen := map[int64]bool{}
	done := func() bool {
		for _, j := range want {
			if !seen[j] {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		r := do(t, appFlat, "GET", "/v2/jobs/changes?limit="+itoa(int64(limit))+"&since="+since, "", &id)
		if r.Status != 200 {
			t.Fatalf("changes: %d %s", r.Status, r.Body)
		}
		var p changesPage
		r.data(t, &p)
		if len(p.Changes) > limit {
			t.Fatalf("page of %d for limit %d", len(p.Changes), limit)
		}
		for _, c := range p.Changes {
			all = append(all, c)
			seen[c.IDJob] = true
		}
		since = p.NextCursor
		if len(p.Changes) == 0 && done() || time.Now().After(deadline) {
			return all, since
		}
		if len(p.Changes) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func changesOf(cs []change, jobID int64) (out []change) {
	for _, c := range cs {
		if c.IDJob == jobID {
			out = append(out, c)
		}
	}
	return out
}

// The feed shows each key what GET /v2/jobs/{id} would: a space key its
// space's jobs in every status (the owner's links with them); a platform
// key the jobs it created and the public ones, and their removals as
// {id_job, status} only; nobody another space's drafts.
func TestChangesFeedVisibility(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	space := liveKey(3510, 1351)
	public := create(t, space, jobBody("Feed Public Host", 3501))
	transition(t, space, "pause", public.JobID)
	draftKey := liveKey(3511, 2352)
	draft := create(t, draftKey, jobBody("Feed Hidden Draft", 3501))
	platform := liveKey(3512, 0)
	own := create(t, platform, jobBody("Feed Platform Own", 3501))

	cs, _ := follow(t, space, start, 2, public.JobID)
	mine := changesOf(cs, public.JobID)
	if len(mine) != 2 || mine[0].Event.Type != "job.created" || mine[1].Event.Type != "job.paused" {
		t.Fatalf("space key: %+v", mine)
	}
	for _, c := range mine {
		if c.Title == nil || c.Status != "paused" || c.EditURL == nil {
			t.Fatalf("the space sees its paused job whole, with its links: %+v", c)
		}
	}
	if len(changesOf(cs, draft.JobID))+len(changesOf(cs, own.JobID)) != 0 {
		t.Fatalf("a space key heard of other posters' jobs: %+v", cs)
	}

	cs, _ = follow(t, platform, start, 50, public.JobID, own.JobID)
	pub := changesOf(cs, public.JobID)
	if len(pub) != 2 || pub[1].Event.Type != "job.paused" {
		t.Fatalf("platform key: the public job's changes %+v", pub)
	}
	for _, c := range pub {
		if c.Title != nil || c.Status != "paused" || c.EditURL != nil {
			t.Fatalf("a job the platform no longer reads is only id and status: %+v", c)
		}
	}
	if o := changesOf(cs, own.JobID); len(o) != 1 || o[0].Title == nil {
		t.Fatalf("platform key: its own draft %+v", o)
	}
	if d := changesOf(cs, draft.JobID); len(d) != 0 {
		t.Fatalf("a platform key heard of another poster's draft: %+v", d)
	}
}

// A mirror following the cursor sees each change once in commit order,
// ids unique, across pages of one.
func TestChangesFeedPagesOnCursor(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	key := liveKey(3520, 1352)
	a := create(t, key, jobBody("Cursor Host A", 3502))
	b := create(t, key, jobBody("Cursor Host B", 3502))
	transition(t, key, "pause", a.JobID)
	cs, cursor := follow(t, key, start, 1, a.JobID, b.JobID)
	for deadline := time.Now().Add(10 * time.Second); len(cs) < 3 && time.Now().Before(deadline); {
		var more []change
		more, cursor = follow(t, key, cursor, 1)
		cs = append(cs, more...)
	}
	ids := map[string]bool{}
	var order []string
	for _, c := range cs {
		if ids[c.Event.ID] {
			t.Fatalf("event %s twice", c.Event.ID)
		}
		ids[c.Event.ID] = true
		order = append(order, itoa(c.IDJob)+":"+c.Event.Type)
	}
	want := []string{itoa(a.JobID) + ":job.created", itoa(b.JobID) + ":job.created", itoa(a.JobID) + ":job.paused"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	// Caught up: an empty page keeps a cursor to go on from.
	r := do(t, appFlat, "GET", "/v2/jobs/changes?since="+cursor, "", &key)
	var p changesPage
	r.data(t, &p)
	if r.Status != 200 || len(p.Changes) != 0 || p.NextCursor == "" {
		t.Fatalf("caught up: %d %s", r.Status, r.Body)
	}
}

func TestChangesFeedRefusals(t *testing.T) {
	t.Parallel()
	key := liveKey(3530, 1353)
	old := jobapp.EncodeCursor(jobbus.Cursor{XID: 5, Seq: 1, At: time.Now().Add(-31 * 24 * time.Hour)})
	for _, tc := range []struct {
		name, query string
		status      int
		detail      string
	}{
		{"since422", "since=yesterday", 422, "since"},
		{"since422Cursor", "since=c1_!!", 422, "since"},
		{"since422Empty", "since=", 422, "since"},
		{"limit422", "limit=0", 422, "limit"},
		{"limit422Big", "limit=501", 422, "limit"},
		{"limit422Text", "limit=ten", 422, "limit"},
		{"since410Time", "since=" + time.Now().Add(-31*24*time.Hour).UTC().Format(time.RFC3339), 410, ""},
		{"since410Cursor", "since=" + old, 410, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, appFlat, "GET", "/v2/jobs/changes?"+tc.query, "", &key)
			if r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tc.detail != "" && !r.hasDetail(tc.detail) {
				t.Fatalf("422 does not name %s: %s", tc.detail, r.Body)
			}
			if tc.status == 410 && (r.Env.Error.Code != "gone" || !strings.Contains(r.Env.Error.Message, "GET /v2/jobs")) {
				t.Fatalf("410: %s", r.Body)
			}
		})
	}
}
