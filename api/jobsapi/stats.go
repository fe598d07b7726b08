package jobsapi

// SpaceStats is the answer of GET /internal/spaces/{id}/stats?days=: the
// daily numbers of a space's jobs over the last days (UTC days, oldest
// first), for the dashboard's charts. Jobs without any event are absent.
type SpaceStats struct {
	From string         `json:"from"`
	To   string         `json:"to"`
	Jobs []SpaceJobStat `json:"jobs"`
}

// SpaceJobStat is one job's numbers in SpaceStats.
type SpaceJobStat struct {
	ID           int64      `json:"id_job"`
	Views        int64      `json:"views"`
	UniqueViews  int64      `json:"unique_views"`
	ApplyClicks  int64      `json:"apply_clicks"`
	UniqueClicks int64      `json:"unique_clicks"`
	Impressions  int64      `json:"impressions"`
	Days         []DayCount `json:"days"`
}

// DayCount is a job's views and apply clicks of one UTC day.
type DayCount struct {
	Day         string `json:"day"`
	Views       int64  `json:"views"`
	ApplyClicks int64  `json:"apply_clicks"`
}
