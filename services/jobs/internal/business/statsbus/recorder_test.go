package statsbus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// memWriter keeps what it was given; while down it fails.
type memWriter struct {
	mu     sync.Mutex
	down   bool
	events []Event
}

func (w *memWriter) Write(_ context.Context, ev []Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return errors.New("store away")
	}
	w.events = append(w.events, ev...)
	return nil
}

func (w *memWriter) Purge(context.Context, time.Time, time.Time) error { return nil }

func (w *memWriter) setDown(d bool) { w.mu.Lock(); w.down = d; w.mu.Unlock() }

func (w *memWriter) total() (n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.events {
		n += int64(e.N)
	}
	return n
}

// While the store is away events wait in the buffer, and nothing is lost
// when it is back; past the bound new events are dropped and counted.
func TestRecorderKeepsEventsWhileTheStoreIsAway(t *testing.T) {
	w := &memWriter{down: true}
	reg := prometheus.NewRegistry()
	r := NewRecorder(w, RecorderConfig{MaxPending: 100, Registry: reg})
	for i := range 150 {
		r.Record(Event{JobID: int64(i % 3), Kind: KindClick, Channel: "page", Visitor: int64(i + 1)})
	}
	if err := r.Flush(context.Background()); err == nil {
		t.Fatal("flush with the store away: no error")
	}
	if r.Pending() != 100 || testutil.ToFloat64(r.dropped) != 50 {
		t.Fatalf("pending %d dropped %v, want 100 and 50", r.Pending(), testutil.ToFloat64(r.dropped))
	}
	w.setDown(false)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.total() != 100 || r.Pending() != 0 {
		t.Fatalf("written %d pending %d, want 100 and 0", w.total(), r.Pending())
	}
	if got := testutil.ToFloat64(r.events.WithLabelValues("click", "browser")); got != 100 {
		t.Errorf("jobs_stats_events_total{click,browser} = %v, want 100 (the accepted events)", got)
	}
}

// Run writes within a second, and writes what is left when it stops.
func TestRecorderRunWritesWithinASecondAndAtShutdown(t *testing.T) {
	w := &memWriter{}
	r := NewRecorder(w, RecorderConfig{Every: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	r.Record(Event{JobID: 1, Kind: KindView, Channel: "page", Visitor: 1})
	deadline := time.Now().Add(time.Second)
	for w.total() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.total() != 1 {
		t.Fatal("not written within a second")
	}
	r.Record(Event{JobID: 1, Kind: KindView, Channel: "page", Visitor: 2})
	cancel()
	<-done
	if w.total() != 2 {
		t.Fatalf("written %d at shutdown, want 2", w.total())
	}
}

// Impressions of one job, channel, day and agent are one pending entry.
func TestRecorderCoalescesImpressions(t *testing.T) {
	w := &memWriter{}
	r := NewRecorder(w, RecorderConfig{})
	for range 1000 {
		r.Record(Event{JobID: 5, Kind: KindImpression, Channel: "feed", Visitor: 99})
	}
	if r.Pending() != 1 {
		t.Fatalf("pending %d, want 1", r.Pending())
	}
	_ = r.Flush(context.Background())
	if len(w.events) != 1 || w.events[0].N != 1000 || w.events[0].Visitor != 0 {
		t.Fatalf("written %+v", w.events)
	}
}

func TestClassify(t *testing.T) {
	for ua, want := range map[string]Agent{
		"": AgentNone, "   ": AgentNone,
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36": AgentBrowser,
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                AgentCrawler,
		"facebookexternalhit/1.1": AgentCrawler, "curl/8.5.0": AgentCrawler, "Go-http-client/1.1": AgentCrawler,
		"Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/120.0": AgentCrawler,
	} {
		if got := Classify(ua); got != want {
			t.Errorf("Classify(%q) = %v, want %v", ua, got, want)
		}
	}
}

func TestChannel(t *testing.T) {
	for raw, want := range map[string]string{
		"Newsletter": "newsletter", "aggregator:indeed": "aggregator:indeed", "https://evil.example/x?y": "https:evil.examplexy",
		"<script>": "script", "": "", string(make([]byte, 100)): "",
	} {
		if got := Channel(raw); got != want {
			t.Errorf("Channel(%q) = %q, want %q", raw, got, want)
		}
	}
	if len(Channel(string(make([]rune, 200)))+"a") > MaxChannel+1 {
		t.Error("a channel is cut at MaxChannel")
	}
}

// A visitor is the same for the same client on one UTC day, another on the
// next, and another for another client.
func TestVisitors(t *testing.T) {
	v, err := NewVisitors([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	d1 := time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)
	a := v.Of(d1, "192.0.2.1", "Mozilla/5.0")
	if a != v.Of(d1.Add(20*time.Hour), "192.0.2.1", "Mozilla/5.0") {
		t.Error("same client, same day: another visitor")
	}
	if a == v.Of(d1.Add(24*time.Hour), "192.0.2.1", "Mozilla/5.0") {
		t.Error("same client, next day: the same visitor (the salt did not rotate)")
	}
	if a == v.Of(d1, "192.0.2.2", "Mozilla/5.0") || a == v.Of(d1, "192.0.2.1", "Mozilla/5.1") {
		t.Error("another client: the same visitor")
	}
	if _, err := NewVisitors([]byte("short")); err == nil {
		t.Error("a short secret accepted")
	}
}
