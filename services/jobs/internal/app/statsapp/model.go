package statsapp

import (
	"cmp"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/api/jobsapi"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
)

// counts is the HTTP model of statsbus.Counts.
type counts struct {
	Views        int64 `json:"views"`
	UniqueViews  int64 `json:"unique_views"`
	ApplyClicks  int64 `json:"apply_clicks"`
	UniqueClicks int64 `json:"unique_clicks"`
	Impressions  int64 `json:"impressions"`
	BotViews     int64 `json:"bot_views"`
	BotClicks    int64 `json:"bot_clicks"`
}

func toCounts(c statsbus.Counts) counts {
	return counts{Views: c.Views, UniqueViews: c.UniqueViews, ApplyClicks: c.Clicks, UniqueClicks: c.UniqueClicks,
		Impressions: c.Impressions, BotViews: c.BotViews, BotClicks: c.BotClicks}
}

type period struct {
	Start string `json:"start"`
	counts
	ByChannel map[string]counts `json:"by_channel"`
}

type jobStats struct {
	IDJob     int64    `json:"id_job"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Interval  string   `json:"interval"`
	TimeZone  string   `json:"time_zone"`
	Totals    counts   `json:"totals"`
	Intervals []period `json:"intervals"`
}

type topJob struct {
	IDJob int64  `json:"id_job"`
	Title string `json:"title"`
	counts
}

type summary struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	TimeZone string   `json:"time_zone"`
	Totals   counts   `json:"totals"`
	TopJobs  []topJob `json:"top_jobs"`
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func toJobStats(s statsbus.JobStats) jobStats {
	out := jobStats{IDJob: s.JobID, From: day(s.From), To: day(s.To), Interval: s.Interval, TimeZone: "UTC",
		Totals: toCounts(s.Totals), Intervals: make([]period, len(s.Periods))}
	for i, p := range s.Periods {
		out.Intervals[i] = period{Start: day(p.Start), counts: toCounts(p.Counts), ByChannel: make(map[string]counts, len(p.ByChannel))}
		for ch, c := range p.ByChannel {
			out.Intervals[i].ByChannel[ch] = toCounts(c)
		}
	}
	return out
}

// jobStats answers GET /v2/jobs/{id_job}/stats.
func (k *Counter) jobStats(c *fiber.Ctx) error {
	r, err := parseRange(c, true)
	if err != nil {
		return err
	}
	id, err := c.ParamsInt("id_job")
	if err != nil || id <= 0 {
		return web.NotFound("Job not found")
	}
	s, err := k.cfg.Stats.Job(c.UserContext(), caller(c), int64(id), r)
	if err != nil {
		return toWebError(err)
	}
	c.Set(fiber.HeaderCacheControl, "private, no-cache")
	return web.OK(c, fiber.StatusOK, toJobStats(s))
}

// summary answers GET /v2/stats.
func (k *Counter) summary(c *fiber.Ctx) error {
	r, err := parseRange(c, false)
	if err != nil {
		return err
	}
	s, err := k.cfg.Stats.Summary(c.UserContext(), caller(c), r)
	if err != nil {
		return toWebError(err)
	}
	out := summary{From: day(s.From), To: day(s.To), TimeZone: "UTC", Totals: toCounts(s.Totals), TopJobs: make([]topJob, len(s.Top))}
	for i, j := range s.Top {
		out.TopJobs[i] = topJob{IDJob: j.JobID, Title: j.Title, counts: toCounts(j.Counts)}
	}
	c.Set(fiber.HeaderCacheControl, "private, no-cache")
	return web.OK(c, fiber.StatusOK, out)
}

// spaceStats answers GET /internal/spaces/{id}/stats?days= (1..92, default
// 30): the daily views and clicks of the space's jobs, for the dashboard.
func (k *Counter) spaceStats(c *fiber.Ctx) error {
	id, err := c.ParamsInt("id")
	if err != nil || id <= 0 {
		return web.NotFound("Space not found")
	}
	days := c.QueryInt("days", 30)
	if days < 1 || days > 92 {
		return web.Validation("Validation failed", []string{"days must be between 1 and 92"})
	}
	to := statsbus.Day(k.cfg.Now())
	from := to.AddDate(0, 0, 1-days)
	series, err := k.cfg.Stats.SpaceSeries(c.UserContext(), int64(id), from, to)
	if err != nil {
		return toWebError(err)
	}
	out := jobsapi.SpaceStats{From: day(from), To: day(to), Jobs: make([]jobsapi.SpaceJobStat, 0, len(series))}
	for jobID, s := range series {
		j := jobsapi.SpaceJobStat{ID: jobID, Views: s.Totals.Views, UniqueViews: s.Totals.UniqueViews, ApplyClicks: s.Totals.Clicks,
			UniqueClicks: s.Totals.UniqueClicks, Impressions: s.Totals.Impressions, Days: make([]jobsapi.DayCount, len(s.Periods))}
		for i, p := range s.Periods {
			j.Days[i] = jobsapi.DayCount{Day: day(p.Start), Views: p.Counts.Views, ApplyClicks: p.Counts.Clicks}
		}
		out.Jobs = append(out.Jobs, j)
	}
	slices.SortFunc(out.Jobs, func(a, b jobsapi.SpaceJobStat) int { return cmp.Compare(b.ID, a.ID) })
	return web.OK(c, fiber.StatusOK, out)
}
