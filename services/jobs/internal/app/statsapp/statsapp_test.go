package statsapp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

const secret = "0123456789abcdef0123456789abcdef"

// fakeJobs holds jobs by id; while down every look-up fails.
type fakeJobs struct {
	mu   sync.Mutex
	down bool
	jobs map[int64]jobbus.Detail
}

func (f *fakeJobs) PublicByID(_ context.Context, id int64) (jobbus.Detail, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return jobbus.Detail{}, errors.New("connection refused")
	}
	d, ok := f.jobs[id]
	if !ok {
		return jobbus.Detail{}, jobbus.ErrNotFound
	}
	return d, nil
}

func (f *fakeJobs) Visible(d jobbus.Detail) bool { return d.Status == jobbus.StatusActive }
func (f *fakeJobs) JobURL(p string) string       { return "https://board.example/jobs/" + p }
func (f *fakeJobs) BaseURL() string              { return "https://board.example" }

type nopWriter struct{}

func (nopWriter) Write(context.Context, []statsbus.Event) error     { return nil }
func (nopWriter) Purge(context.Context, time.Time, time.Time) error { return nil }

// While the jobs' store is away, a job clicked lately still redirects to
// its own apply URL (and the click is counted); one never seen answers an
// error, not a guess; a tampered ref is a 404 either way.
func TestRedirectRemembersWhereJobsLed(t *testing.T) {
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := statsbus.NewRefs([]byte(secret))
	visitors, _ := statsbus.NewVisitors([]byte(secret))
	apply := "https://apply.example/x"
	jobs := &fakeJobs{jobs: map[int64]jobbus.Detail{}}
	for _, id := range []int64{1, 2} {
		d := jobbus.Detail{}
		d.ID, d.Slug, d.Status, d.ApplyURL = id, "host", jobbus.StatusActive, &apply
		jobs.jobs[id] = d
	}
	rec := statsbus.NewRecorder(nopWriter{}, statsbus.RecorderConfig{})
	k := NewCounter(Config{Log: slog.New(slog.DiscardHandler), Codec: codec, Jobs: jobs, Recorder: rec, Visitors: visitors, Refs: refs})
	app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(slog.DiscardHandler))})
	Routes(app, k)
	hdr, _ := codec.Sign(identity.Identity{Kind: identity.KindPublic, ClientIP: "192.0.2.1"}, time.Minute)
	get := func(ref string) *http.Response {
		t.Helper()
		req := httptest.NewRequest("GET", "/go/"+ref+"?src=page", nil)
		req.Header.Set(identity.Header, hdr)
		req.Header.Set("User-Agent", "Mozilla/5.0")
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := get(refs.Of(1)); r.StatusCode != 302 || r.Header.Get("Location") != apply {
		t.Fatalf("store up: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	jobs.mu.Lock()
	jobs.down = true
	jobs.mu.Unlock()
	if r := get(refs.Of(1)); r.StatusCode != 302 || r.Header.Get("Location") != apply {
		t.Errorf("store down, job clicked before: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(refs.Of(2)); r.StatusCode < 500 || r.Header.Get("Location") != "" {
		t.Errorf("store down, job never clicked: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get("1-000000000000"); r.StatusCode != 404 {
		t.Errorf("tampered ref: %d", r.StatusCode)
	}
	// A HEAD (a link checker) is redirected, not counted.
	jobs.mu.Lock()
	jobs.down = false
	jobs.mu.Unlock()
	head := httptest.NewRequest("HEAD", "/go/"+refs.Of(1)+"?src=page", nil)
	head.Header.Set(identity.Header, hdr)
	head.Header.Set("User-Agent", "Mozilla/5.0")
	if r, err := app.Test(head, -1); err != nil || r.StatusCode != 302 {
		t.Errorf("HEAD: %v %v", r, err)
	}
	if rec.Pending() != 2 {
		t.Errorf("%d clicks counted, want 2 (the two GETs redirected to the apply URL)", rec.Pending())
	}
	// Without the gateway's identity: 401.
	res, _ := app.Test(httptest.NewRequest("GET", "/go/"+refs.Of(1), nil), -1)
	if res.StatusCode != 401 {
		t.Errorf("without identity: %d", res.StatusCode)
	}
}

// With counting off (STATS_COUNTING=false) the redirect still leads to the
// job's apply URL, and nothing is counted: no click, view or impression.
func TestCountingOffCountsNothing(t *testing.T) {
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := statsbus.NewRefs([]byte(secret))
	visitors, _ := statsbus.NewVisitors([]byte(secret))
	apply := "https://apply.example/off"
	d := jobbus.Detail{}
	d.ID, d.Slug, d.Status, d.ApplyURL = 3, "host", jobbus.StatusActive, &apply
	jobs := &fakeJobs{jobs: map[int64]jobbus.Detail{3: d}}
	rec := statsbus.NewRecorder(nopWriter{}, statsbus.RecorderConfig{})
	k := NewCounter(Config{Log: slog.New(slog.DiscardHandler), Codec: codec, Jobs: jobs, Recorder: rec, Visitors: visitors, Refs: refs, Off: true})
	app := fiber.New(fiber.Config{ErrorHandler: web.ErrorHandler(slog.New(slog.DiscardHandler))})
	Routes(app, k)
	app.Get("/page", func(c *fiber.Ctx) error { return c.SendString(k.View(c, 3)) })
	hdr, _ := codec.Sign(identity.Identity{Kind: identity.KindPublic, ClientIP: "192.0.2.1"}, time.Minute)
	for _, path := range []string{"/go/" + refs.Of(3) + "?src=page", "/page?utm_source=news"} {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set(identity.Header, hdr)
		req.Header.Set("User-Agent", "Mozilla/5.0")
		res, err := app.Test(req, -1)
		if err != nil || res.StatusCode >= 400 {
			t.Fatalf("%s: %v %v", path, res, err)
		}
		if path[1] == 'g' && res.Header.Get("Location") != apply {
			t.Errorf("redirect with counting off: %d %q", res.StatusCode, res.Header.Get("Location"))
		}
	}
	k.Impression(statsbus.AgentBrowser, statsbus.ChannelFeed, 3)
	if rec.Pending() != 0 {
		t.Errorf("%d events counted with counting off", rec.Pending())
	}
}
