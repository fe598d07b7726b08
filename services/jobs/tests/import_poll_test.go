package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/importapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/feeds"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/stores/importdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// bigFeed serves a json feed of n positions with an ETag, answering 304 to
// a matching If-None-Match, and counts its requests.
func bigFeed(tb testing.TB, prefix string, n int) (*httptest.Server, *atomic.Int64) {
	jobs := batchJobs(prefix, 1, n, nil)
	body, err := json.Marshal(map[string]any{"jobs": jobs})
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv, &asked
}

// importer is the poller as jobs-worker wires it, over the test database
// and the directory fixture, with loopback allowed.
func importer() (*importbus.Business, *importdb.Store) {
	allow := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	store := importdb.New(pool)
	return importbus.New(store, newBus(baseURL, dirURL), nil, importbus.Config{AllowHTTP: true, Allow: allow, Decode: jobapp.DecodeCreate,
		Client: outbound.New(outbound.Config{Allow: allow, Timeout: feeds.FetchTimeout, MaxRead: feeds.MaxFeed})}), store
}

// pollSource registers a json source of feedURL for platform key keyID and
// polls it twice (the second time due again at once, as a sync makes it).
func pollSource(tb testing.TB, keyID int64, feedURL string) (first, second importbus.Polled, d1, d2 time.Duration) {
	b, store := importer()
	ctx := bgContext
	src, err := store.Create(ctx, importbus.Source{KeyID: keyID, Trusted: true, Kind: feeds.JSON, URL: feedURL, FeedURL: feedURL,
		Interval: time.Hour, Mode: importbus.ModeReplace, NextPollAt: time.Now()})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if first, err = b.Poll(ctx, src.ID); err != nil {
		tb.Fatal(err)
	}
	d1 = time.Since(start)
	if _, err := store.Sync(ctx, importbus.OwnerOf(jobbus.Caller{KeyID: keyID}), src.ID); err != nil {
		tb.Fatal(err)
	}
	start = time.Now()
	if second, err = b.Poll(ctx, src.ID); err != nil {
		tb.Fatal(err)
	}
	return first, second, d1, time.Since(start)
}

// A 300-position source: one poll converges (every position created), and
// the next, unchanged, is a single conditional request answered 304 with
// no write.
func TestImportPoll300Converges(t *testing.T) {
	srv, asked := bigFeed(t, "conv-"+fmt.Sprint(time.Now().UnixNano()), 300)
	first, second, _, _ := pollSource(t, 4910, srv.URL)
	if r := first.Run; r == nil || r.Error != nil || r.Positions != 300 || r.Created != 300 || r.Errors != 0 {
		t.Fatalf("the first poll: %+v", first.Run)
	}
	if r := second.Run; r == nil || !r.NotModified || r.Created+r.Updated+r.Unchanged+r.Closed+r.Errors != 0 {
		t.Fatalf("the second poll: %+v", second.Run)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("%d requests to the feed, want 2 (one each poll)", n)
	}
}

// A feed that suddenly lists nothing closes nothing: the run records why,
// every job of the source stays active, and the next poll reads it whole
// again (no validators kept), so the board coming back is applied as usual.
func TestImportEmptyFeedClosesNothing(t *testing.T) {
	jobs := batchJobs("empty-"+fmt.Sprint(time.Now().UnixNano()), 1, 3, nil)
	full, err := json.Marshal(map[string]any{"jobs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	var empty atomic.Bool
	var conditional atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
		}
		if empty.Load() {
			w.Header().Set("ETag", `"empty"`)
			_, _ = w.Write([]byte(`{"jobs":[]}`))
			return
		}
		_, _ = w.Write(full)
	}))
	t.Cleanup(srv.Close)
	b, store := importer()
	src, err := store.Create(bgContext, importbus.Source{KeyID: 4920, Trusted: true, Kind: feeds.JSON, URL: srv.URL, FeedURL: srv.URL,
		Interval: time.Hour, Mode: importbus.ModeReplace, NextPollAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	owner := importbus.OwnerOf(jobbus.Caller{KeyID: 4920})
	poll := func() *importbus.Run {
		t.Helper()
		if _, err := store.Sync(bgContext, owner, src.ID); err != nil {
			t.Fatal(err)
		}
		p, err := b.Poll(bgContext, src.ID)
		if err != nil || p.Run == nil {
			t.Fatalf("poll: %+v %v", p, err)
		}
		return p.Run
	}
	active := func() int {
		var n int
		if err := pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE external_ref LIKE $1 AND status = 'active'`,
			jobbus.SourceRef(src.ID)+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if r := poll(); r.Created != 3 || r.Error != nil || active() != 3 {
		t.Fatalf("first poll: %+v, %d active", r, active())
	}
	empty.Store(true)
	for range 2 {
		if r := poll(); r.Error == nil || r.Closed != 0 || r.Positions != 0 || active() != 3 {
			t.Fatalf("an empty feed: %+v, %d active", r, active())
		}
	}
	if n := conditional.Load(); n != 0 {
		t.Fatalf("%d conditional requests after an empty feed: its ETag was kept", n)
	}
	empty.Store(false)
	if r := poll(); r.Error != nil || r.Unchanged != 3 || active() != 3 {
		t.Fatalf("the board back: %+v, %d active", r, active())
	}
}

// BenchmarkImportPoll300: one source of 300 new positions polled (created
// all), then polled again unchanged (one 304); reported per poll.
func BenchmarkImportPoll300(b *testing.B) {
	var full, unchanged time.Duration
	for i := range b.N {
		srv, _ := bigFeed(b, fmt.Sprintf("bench-%d-%d-%d", time.Now().UnixNano(), b.N, i), 300)
		first, second, d1, d2 := pollSource(b, 4911+int64(i), srv.URL)
		if first.Run == nil || first.Run.Created != 300 || second.Run == nil || !second.Run.NotModified {
			b.Fatalf("polls: %+v %+v", first.Run, second.Run)
		}
		full, unchanged = full+d1, unchanged+d2
	}
	b.ReportMetric(float64(300*b.N)/full.Seconds(), "rows/s")
	b.ReportMetric(float64(unchanged.Milliseconds())/float64(b.N), "ms/unchanged-poll")
}

// A sync made while a poll runs is not lost: the source stays due, so the
// sync's wake-up polls it again; without one the next poll is an interval
// away.
func TestImportSyncDuringPollKeepsTheSourceDue(t *testing.T) {
	b, store := importer()
	owner := importbus.OwnerOf(jobbus.Caller{KeyID: 4990})
	var id atomic.Int64
	var syncing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if syncing.Load() {
			if _, err := store.Sync(r.Context(), owner, id.Load()); err != nil {
				t.Error(err)
			}
		}
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	t.Cleanup(srv.Close)
	src, err := store.Create(bgContext, importbus.Source{KeyID: 4990, Kind: feeds.JSON, URL: srv.URL, FeedURL: srv.URL,
		Interval: time.Hour, Mode: importbus.ModeReplace, NextPollAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	id.Store(src.ID)
	if _, err := b.Poll(bgContext, src.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Source(bgContext, src.ID); time.Until(got.NextPollAt) < 59*time.Minute {
		t.Fatalf("after a poll the source is due at %v, want an interval away", got.NextPollAt)
	}
	if _, err := store.Sync(bgContext, owner, src.ID); err != nil {
		t.Fatal(err)
	}
	syncing.Store(true)
	if _, err := b.Poll(bgContext, src.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Source(bgContext, src.ID); got.NextPollAt.After(time.Now()) {
		t.Fatalf("a sync during the poll was lost: due at %v", got.NextPollAt)
	}
}

// The routes in process, each answer checked against the document: a
// source's runs come in pages (limit, before, next_before), a bad id or
// limit is a 422 naming it, a wrong type is a 422 before any rule, and
// another owner's source is 404.
func TestImportRoutesPageRunsAndRefuse(t *testing.T) {
	poller, store := importer()
	srv := web.New(webtest.Config(), testLog, "jobs")
	importapp.Routes(srv.App, importapp.Config{Codec: codec, Bus: importbus.New(store, nil, nil,
		importbus.Config{AllowHTTP: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})})
	app := srv.App
	feed, _ := bigFeed(t, fmt.Sprintf("routes-%d", time.Now().UnixNano()), 2)
	me := identity.Identity{Kind: identity.KindLive, KeyID: 4995, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	other := identity.Identity{Kind: identity.KindLive, KeyID: 4996, Scopes: []string{"jobs:write"}}

	r := do(t, app, "POST", "/v2/import/sources", fmt.Sprintf(`{"kind":"json","url":%q,"interval_minutes":15}`, feed.URL), &me)
	var src struct {
		ID       int64  `json:"id"`
		FeedURL  string `json:"feed_url"`
		Interval int    `json:"interval_minutes"`
	}
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	r.data(t, &src)
	if src.FeedURL != feed.URL || src.Interval != 15 {
		t.Fatalf("created %+v", src)
	}
	for range 3 {
		if _, err := store.Sync(bgContext, importbus.Owner{KeyID: me.KeyID}, src.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := poller.Poll(bgContext, src.ID); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Runs []struct {
			ID          int64 `json:"id"`
			NotModified bool  `json:"not_modified"`
		} `json:"runs"`
		NextBefore *int64 `json:"next_before"`
	}
	var p1, p2 page
	do(t, app, "GET", fmt.Sprintf("/v2/import/sources/%d/runs?limit=2", src.ID), "", &me).data(t, &p1)
	if len(p1.Runs) != 2 || p1.NextBefore == nil || !p1.Runs[0].NotModified || p1.Runs[0].ID < p1.Runs[1].ID {
		t.Fatalf("the first page: %+v", p1)
	}
	do(t, app, "GET", fmt.Sprintf("/v2/import/sources/%d/runs?limit=2&before=%d", src.ID, *p1.NextBefore), "", &me).data(t, &p2)
	if len(p2.Runs) != 1 || p2.NextBefore != nil || p2.Runs[0].NotModified || p2.Runs[0].ID >= p1.Runs[1].ID {
		t.Fatalf("the last page: %+v", p2)
	}
	for _, c := range []struct {
		method, path, body string
		id                 *identity.Identity
		status             int
		detail             string
	}{
		{"GET", fmt.Sprintf("/v2/import/sources/%d/runs?limit=0", src.ID), "", &me, 422, "limit"},
		{"GET", fmt.Sprintf("/v2/import/sources/%d/runs?limit=101", src.ID), "", &me, 422, "limit"},
		{"GET", "/v2/import/sources/abc", "", &me, 422, "id_source must be a positive integer"},
		{"POST", "/v2/import/sources", `{"kind":true,"interval_minutes":"x"}`, &me, 422, "kind"},
		{"POST", "/v2/import/sources", `{"kind":"json","url":"https://f.example/x","extra":1}`, &me, 422, "unknown field"},
		{"GET", fmt.Sprintf("/v2/import/sources/%d", src.ID), "", &other, 404, ""},
		{"GET", fmt.Sprintf("/v2/import/sources/%d/runs", src.ID), "", &other, 404, ""},
		{"POST", fmt.Sprintf("/v2/import/sources/%d/sync", src.ID), "", &other, 404, ""},
		{"DELETE", fmt.Sprintf("/v2/import/sources/%d", src.ID), "", &other, 404, ""},
	} {
		r := do(t, app, c.method, c.path, c.body, c.id)
		if r.Status != c.status || (c.detail != "" && !r.hasDetail(c.detail)) {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.Status, r.Body)
		}
	}
	var l struct {
		Sources []struct {
			ID int64 `json:"id"`
		} `json:"sources"`
	}
	do(t, app, "GET", "/v2/import/sources", "", &other).data(t, &l)
	if len(l.Sources) != 0 {
		t.Fatalf("another owner lists %+v", l)
	}
	if r := do(t, app, "DELETE", fmt.Sprintf("/v2/import/sources/%d", src.ID), "", &me); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if p, err := poller.Poll(bgContext, src.ID); err != nil || !p.Gone {
		t.Fatalf("the deleted source's poll: %+v %v", p, err)
	}
}
