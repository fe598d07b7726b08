package statsdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// fakeJobs owns one job of space 7 and one a platform key 9 posted.
type fakeJobs struct{}

func (fakeJobs) Get(_ context.Context, c jobbus.Caller, id int64) (jobbus.Detail, error) {
	d := jobbus.Detail{}
	d.ID, d.Status, d.ExpirationDate = id, jobbus.StatusActive, time.Now().Add(time.Hour)
	switch id % 2 {
	case 0:
		d.SpaceID = 7
	default:
		d.KeyID = 9
	}
	if c.SpaceID != 0 && c.SpaceID != d.SpaceID {
		return jobbus.Detail{}, jobbus.ErrForbidden
	}
	return d, nil
}

func (fakeJobs) Visible(jobbus.Detail) bool { return true }

type fakeSpaces map[int64]jobbus.Space

func (f fakeSpaces) Space(_ context.Context, id int64) (jobbus.Space, bool, error) {
	s, ok := f[id]
	return s, ok, nil
}

// Events recorded on both sides of midnight UTC, written in one batch by
// the Recorder, read back through the business rules: two UTC days, the
// same client a unique visitor on each; a week interval holds both days
// when they are in one ISO week and splits them at a Sunday. And the plan
// and ownership rules of the reads.
func TestRecorderAcrossMidnightReadBack(t *testing.T) {
	ctx := context.Background()
	job := 2 * (time.Now().UnixNano()%1_000_000_000 + 1) // even: space 7's
	visitors, err := statsbus.NewVisitors([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	// Tuesday 3 March 2026, 23:59:59 UTC, then Wednesday 00:00:01.
	before := time.Date(2026, 3, 3, 23, 59, 59, 0, time.UTC)
	after := before.Add(2 * time.Second)
	store := New(pool)
	rec := statsbus.NewRecorder(store, statsbus.RecorderConfig{})
	for _, at := range []time.Time{before, before, after} {
		rec.Record(statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: at,
			Visitor: visitors.Of(at, "198.51.100.7", "Mozilla/5.0")})
	}
	rec.Record(statsbus.Event{JobID: job, Kind: statsbus.KindView, Channel: "page", At: after.In(time.FixedZone("PST", -8*3600)),
		Visitor: visitors.Of(after, "198.51.100.7", "Mozilla/5.0")})
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b := &statsbus.Business{Store: store, Jobs: fakeJobs{}, Spaces: fakeSpaces{7: {ID: 7, Confirmed: true, IsPro: true}, 8: {ID: 8, Confirmed: true}},
		Now: func() time.Time { return after }}
	pro := jobbus.Caller{KeyID: 1, SpaceID: 7}
	st, err := b.Job(ctx, pro, job, statsbus.Range{From: before, To: after})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Periods) != 2 {
		t.Fatalf("periods %+v", st.Periods)
	}
	tue, wed := st.Periods[0].Counts, st.Periods[1].Counts
	if tue.Clicks != 2 || tue.UniqueClicks != 1 || wed.Clicks != 1 || wed.UniqueClicks != 1 || wed.Views != 1 || tue.Views != 0 {
		t.Errorf("Tuesday %+v, Wednesday %+v", tue, wed)
	}
	week, err := b.Job(ctx, pro, job, statsbus.Range{From: before, To: after, Interval: statsbus.IntervalWeek})
	if err != nil || len(week.Periods) != 1 || week.Periods[0].Start.Weekday() != time.Monday ||
		week.Periods[0].Counts.Clicks != 3 || week.Periods[0].Counts.UniqueClicks != 2 {
		t.Errorf("week: %+v %v", week.Periods, err)
	}
	// The rules: another space's key 403, a non-Pro space's key ErrPlan,
	// a platform key another's job 403, its own numbers readable.
	if _, err := b.Job(ctx, jobbus.Caller{KeyID: 2, SpaceID: 8}, job, statsbus.Range{}); !errors.Is(err, jobbus.ErrForbidden) {
		t.Errorf("another space: %v", err)
	}
	if _, err := b.Job(ctx, jobbus.Caller{KeyID: 9}, job, statsbus.Range{}); !errors.Is(err, jobbus.ErrForbidden) {
		t.Errorf("a platform key, a space's job: %v", err)
	}
	if _, err := b.Job(ctx, jobbus.Caller{KeyID: 9}, job+1, statsbus.Range{}); err != nil {
		t.Errorf("a platform key, its own job: %v", err)
	}
	if _, err := b.Summary(ctx, jobbus.Caller{KeyID: 3, SpaceID: 8}, statsbus.Range{}); !errors.Is(err, statsbus.ErrPlan) {
		t.Errorf("a non-Pro space's summary: %v", err)
	}
	if _, err := b.Job(ctx, pro, job, statsbus.Range{From: after, To: before}); !errors.Is(err, statsbus.ErrRange) {
		t.Errorf("from after to: %v", err)
	}
}

// A job's weeks summed by PostgreSQL (WeekRows) are what Series makes of its
// days (Rows) by week: over 40 days from a Thursday (a first and a last week
// cut short), several channels, kinds, agents and visitors.
func TestWeekRowsAreTheDaysByWeek(t *testing.T) {
	ctx := context.Background()
	job := 2*(time.Now().UnixNano()%1_000_000_000+1) + 1
	store := New(pool)
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a Thursday
	to := from.AddDate(0, 0, 39)
	var events []statsbus.Event
	for d := range 42 { // two days past to: not counted
		at := from.AddDate(0, 0, d).Add(time.Duration(d%24) * time.Hour)
		for i := range 1 + d%4 {
			events = append(events,
				statsbus.Event{JobID: job, Kind: statsbus.KindView, Channel: []string{"page", "feed", "embed"}[i%3], At: at, Visitor: int64(100 + i%3)},
				statsbus.Event{JobID: job, Kind: statsbus.KindClick, Channel: "page", At: at, Visitor: int64(200 + d%5)},
				statsbus.Event{JobID: job, Kind: statsbus.KindView, Channel: "page", At: at, Agent: statsbus.AgentCrawler},
				statsbus.Event{JobID: job, Kind: statsbus.KindImpression, Channel: "feed", At: at, N: 3})
		}
	}
	write(t, store, events...)
	r := statsbus.Range{From: from, To: to, Interval: statsbus.IntervalWeek}
	days, err := store.Rows(ctx, job, from, to)
	if err != nil {
		t.Fatal(err)
	}
	weeks, err := store.WeekRows(ctx, job, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(weeks) >= len(days) {
		t.Errorf("%d week rows for %d day rows", len(weeks), len(days))
	}
	want, got := statsbus.Series(job, r, days), statsbus.Series(job, r, weeks)
	if len(got.Periods) != 7 || got.Totals != want.Totals || got.Totals.Views == 0 || got.Totals.UniqueClicks == 0 {
		t.Fatalf("weeks %+v, days %+v (%d periods)", got.Totals, want.Totals, len(got.Periods))
	}
	for i := range want.Periods {
		w, g := want.Periods[i], got.Periods[i]
		if !w.Start.Equal(g.Start) || w.Counts != g.Counts || len(w.ByChannel) != len(g.ByChannel) {
			t.Fatalf("period %d: weeks %+v, days %+v", i, g, w)
		}
		for ch, c := range w.ByChannel {
			if g.ByChannel[ch] != c {
				t.Fatalf("period %d channel %s: weeks %+v, days %+v", i, ch, g.ByChannel[ch], c)
			}
		}
	}
}
