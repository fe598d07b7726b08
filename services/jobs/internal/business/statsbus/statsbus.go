package statsbus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Reader is the storage the reads need.
type Reader interface {
	// Rows returns job's roll-up rows of the days from..to (inclusive).
	Rows(ctx context.Context, jobID int64, from, to time.Time) ([]Row, error)
	// WeekRows is Rows summed by ISO week (Day is the week's Monday, the
	// first and last weeks cut at from and to): what Series makes of Rows
	// by week, a seventh of the rows to read and send.
	WeekRows(ctx context.Context, jobID int64, from, to time.Time) ([]Row, error)
	// OwnerRows returns the roll-up rows of from..to summed over the days
	// (Day is zero) for the jobs of a space (spaceID != 0) or else those a
	// key without a space posted, with the jobs' titles.
	OwnerRows(ctx context.Context, spaceID, keyID int64, from, to time.Time) ([]Row, map[int64]string, error)
	// SpaceRows returns the roll-up rows of from..to of a space's jobs.
	SpaceRows(ctx context.Context, spaceID int64, from, to time.Time) ([]Row, error)
}

// Jobs is what the reads need of the jobs: the job's own ownership rule.
type Jobs interface {
	Get(ctx context.Context, caller jobbus.Caller, id int64) (jobbus.Detail, error)
	Visible(d jobbus.Detail) bool
}

// Spaces tells a space's plan.
type Spaces interface {
	Space(ctx context.Context, id int64) (jobbus.Space, bool, error)
}

// Business answers the posters' stats reads.
type Business struct {
	Store  Reader
	Jobs   Jobs
	Spaces Spaces
	Now    func() time.Time
}

// MaxDays is the longest range one read covers.
const MaxDays = 366

// TopJobs is the number of jobs in a summary's top list.
const TopJobs = 10

// Range is a read's days; zero From or To take the defaults (the last 30
// days up to today, UTC).
type Range struct {
	From, To time.Time
	Interval string
}

func (b *Business) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// resolve fills the defaults and checks the range.
func (b *Business) resolve(r Range) (Range, error) {
	if r.To.IsZero() {
		r.To = Day(b.now())
	}
	if r.From.IsZero() {
		r.From = r.To.AddDate(0, 0, -29)
	}
	r.From, r.To = Day(r.From), Day(r.To)
	if r.Interval == "" {
		r.Interval = IntervalDay
	}
	switch {
	case r.To.Before(r.From):
		return r, fmt.Errorf("%w: from must not be after to", ErrRange)
	case r.To.Sub(r.From) >= MaxDays*24*time.Hour:
		return r, fmt.Errorf("%w: a range covers at most %d days", ErrRange, MaxDays)
	case r.Interval != IntervalDay && r.Interval != IntervalWeek:
		return r, fmt.Errorf("%w: interval must be day or week", ErrRange)
	}
	return r, nil
}

// allowed is the plan rule: a key without a space (a platform's) reads the
// stats of the jobs it posted; a space key reads its space's when the space
// is a confirmed Pro space.
func (b *Business) allowed(ctx context.Context, caller jobbus.Caller) error {
	if caller.SpaceID == 0 {
		return nil
	}
	sp, ok, err := b.Spaces.Space(ctx, caller.SpaceID)
	if err != nil {
		return err
	}
	if !ok || !sp.Confirmed || !sp.IsPro {
		return ErrPlan
	}
	return nil
}

// Job returns a job's series, for a caller that may read the job as the job
// routes say (jobbus.ErrForbidden or ErrNotFound otherwise) and whose key
// is one the stats are for: the job's own space's, or the key without a
// space that posted it.
func (b *Business) Job(ctx context.Context, caller jobbus.Caller, jobID int64, r Range) (JobStats, error) {
	r, err := b.resolve(r)
	if err != nil {
		return JobStats{}, err
	}
	d, err := b.Jobs.Get(ctx, caller, jobID)
	if err != nil {
		return JobStats{}, err
	}
	if caller.SpaceID == 0 && (d.SpaceID != 0 || d.KeyID != caller.KeyID) {
		// Readable as a listed job, but its numbers are its poster's.
		if b.Jobs.Visible(d) {
			return JobStats{}, jobbus.ErrForbidden
		}
		return JobStats{}, jobbus.ErrNotFound
	}
	if err := b.allowed(ctx, caller); err != nil {
		return JobStats{}, err
	}
	read := b.Store.Rows
	if r.Interval == IntervalWeek {
		read = b.Store.WeekRows
	}
	rows, err := read(ctx, jobID, r.From, r.To)
	if err != nil {
		return JobStats{}, fmt.Errorf("stats rows: %w", err)
	}
	return Series(jobID, r, rows), nil
}

// Series folds a job's roll-up rows into the periods of r (every period of
// the range is there, zero or not).
func Series(jobID int64, r Range, rows []Row) JobStats {
	st := JobStats{JobID: jobID, From: r.From, To: r.To, Interval: r.Interval}
	start := func(day time.Time) time.Time {
		if r.Interval == IntervalWeek {
			wd := (int(day.Weekday()) + 6) % 7 // Monday 0
			return day.AddDate(0, 0, -wd)
		}
		return day
	}
	index := map[time.Time]int{}
	for d := start(r.From); !d.After(r.To); {
		index[d] = len(st.Periods)
		st.Periods = append(st.Periods, Period{Start: d, ByChannel: map[string]Counts{}})
		if r.Interval == IntervalWeek {
			d = d.AddDate(0, 0, 7)
		} else {
			d = d.AddDate(0, 0, 1)
		}
	}
	for _, row := range rows {
		i, ok := index[start(Day(row.Day))]
		if !ok {
			continue
		}
		p := &st.Periods[i]
		c := rowCounts(row)
		if row.Channel == "" {
			// The uniques over every channel.
			p.Counts.add(c)
			st.Totals.add(c)
			continue
		}
		ch := p.ByChannel[row.Channel]
		ch.add(c)
		p.ByChannel[row.Channel] = ch
		c.UniqueViews, c.UniqueClicks = 0, 0 // per channel only; the period's come from channel ""
		p.Counts.add(c)
		st.Totals.add(c)
	}
	return st
}

// rowCounts is one row's contribution.
func rowCounts(row Row) Counts {
	var c Counts
	switch {
	case row.Kind == KindImpression:
		c.Impressions = row.Events
	case row.Agent != AgentBrowser && row.Kind == KindView:
		c.BotViews = row.Events
	case row.Agent != AgentBrowser:
		c.BotClicks = row.Events
	case row.Kind == KindView:
		c.Views, c.UniqueViews = row.Events, row.Uniques
	default:
		c.Clicks, c.UniqueClicks = row.Events, row.Uniques
	}
	return c
}

// Summary returns the caller's totals over its jobs (a space key: its
// space's; a key without a space: the jobs it posted) and its top jobs by
// apply clicks, then views.
func (b *Business) Summary(ctx context.Context, caller jobbus.Caller, r Range) (Summary, error) {
	r, err := b.resolve(r)
	if err != nil {
		return Summary{}, err
	}
	if err := b.allowed(ctx, caller); err != nil {
		return Summary{}, err
	}
	rows, titles, err := b.Store.OwnerRows(ctx, caller.SpaceID, caller.KeyID, r.From, r.To)
	if err != nil {
		return Summary{}, fmt.Errorf("stats owner rows: %w", err)
	}
	s := Summary{From: r.From, To: r.To}
	byJob := map[int64]*JobTotal{}
	for _, row := range rows {
		c := rowCounts(row)
		if row.Channel != "" {
			c.UniqueViews, c.UniqueClicks = 0, 0
		}
		s.Totals.add(c)
		jt := byJob[row.JobID]
		if jt == nil {
			jt = &JobTotal{JobID: row.JobID, Title: titles[row.JobID]}
			byJob[row.JobID] = jt
		}
		jt.Counts.add(c)
	}
	for _, jt := range byJob {
		s.Top = append(s.Top, *jt)
	}
	sort.Slice(s.Top, func(i, j int) bool {
		a, b := s.Top[i].Counts, s.Top[j].Counts
		if a.Clicks != b.Clicks {
			return a.Clicks > b.Clicks
		}
		if a.Views != b.Views {
			return a.Views > b.Views
		}
		return s.Top[i].JobID < s.Top[j].JobID
	})
	if len(s.Top) > TopJobs {
		s.Top = s.Top[:TopJobs]
	}
	return s, nil
}

// IsPlan reports a refusal by plan.
func IsPlan(err error) bool { return errors.Is(err, ErrPlan) }

// Totals returns a job's totals of the days from..to, with no caller rule:
// for its poster's mails (the reminder before expiry).
func Totals(ctx context.Context, store Reader, jobID int64, from, to time.Time) (Counts, error) {
	r := Range{From: Day(from), To: Day(to), Interval: IntervalDay}
	if r.To.Before(r.From) {
		return Counts{}, nil
	}
	rows, err := store.Rows(ctx, jobID, r.From, r.To)
	if err != nil {
		return Counts{}, fmt.Errorf("stats rows: %w", err)
	}
	return Series(jobID, r, rows).Totals, nil
}

// SpaceSeries returns the daily series of a space's jobs that had events in
// from..to, by job: the dashboard's charts (the gateway asks as a service,
// for a space the signed-in user administers).
func (b *Business) SpaceSeries(ctx context.Context, spaceID int64, from, to time.Time) (map[int64]JobStats, error) {
	r, err := b.resolve(Range{From: from, To: to, Interval: IntervalDay})
	if err != nil {
		return nil, err
	}
	rows, err := b.Store.SpaceRows(ctx, spaceID, r.From, r.To)
	if err != nil {
		return nil, fmt.Errorf("stats space rows: %w", err)
	}
	byJob := map[int64][]Row{}
	for _, row := range rows {
		byJob[row.JobID] = append(byJob[row.JobID], row)
	}
	out := make(map[int64]JobStats, len(byJob))
	for id, rs := range byJob {
		out[id] = Series(id, r, rs)
	}
	return out, nil
}
