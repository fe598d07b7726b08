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

	"github.com/coworkjobs/coworkjobs/libs/outbound"
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
