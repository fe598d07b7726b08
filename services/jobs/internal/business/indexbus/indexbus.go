// Package indexbus is the model of the search-engine notices (Google's
// Indexing API): which change of a job is a notice, and what a poster reads
// of them (the job's distribution record).
package indexbus

import (
	"context"
	"slices"
	"time"
)

// The two notices the Indexing API takes.
const (
	URLUpdated = "URL_UPDATED"
	URLDeleted = "URL_DELETED"
)

// Type is the notice of a job event: a change that leaves the job active
// (published, updated while active, resumed, relisted) updates its URL, one
// that takes it out of active (paused, closed, unpublished, expired) deletes
// it, and a change that never touches active (a draft's) is none ("").
// The dispatch's SQL (indexdb) says the same; TestNoticeType holds them together.
func Type(status, prevStatus string) string {
	switch {
	case status == "active":
		return URLUpdated
	case prevStatus == "active":
		return URLDeleted
	}
	return ""
}

// Notice is one notification of a URL at a job's version.
type Notice struct {
	ID       int64
	JobID    int64
	URL      string
	Version  int64
	Type     string
	Attempts int
}

// Outcome is what the API answered to one notice.
type Outcome struct {
	OK bool
	// Retry: a failure worth trying again (429, 5xx, the call failed);
	// otherwise a failure is final (the API refused the notice).
	Retry bool
	// Counted: the notice took from the day's quota (the API answered it
	// other than 429).
	Counted bool
	Err     string
}

// Announced is a job's latest notice as its poster reads it.
type Announced struct {
	Type      string     `json:"type"`
	Version   int64      `json:"version"`
	URL       string     `json:"url"`
	Status    string     `json:"status"` // pending, sent, failed
	QueuedAt  time.Time  `json:"queued_at"`
	SentAt    *time.Time `json:"sent_at"`
	LastError *string    `json:"last_error"`
}

// Distribution is where a job is announced and listed, as its poster (and
// only its poster) reads it.
type Distribution struct {
	// Indexing is the latest search-engine notice of the job; nil when none
	// was made (a draft, or notices are off).
	Indexing *Announced `json:"indexing"`
	// ListedIn names where the job is listed now: "sitemap" and "feeds"
	// (/sitemap.xml, GET /v2/vine/jobs in every format) while active, and
	// "aggregators" (GET /feeds/jobs.xml) when its plan is one they take.
	ListedIn []string `json:"listed_in"`
}

// Announcements is where a job's latest notice is read (indexdb.Store).
type Announcements interface {
	Latest(ctx context.Context, jobID int64) (Announced, bool, error)
}

// Record builds a job's distribution record; aggregatorPlans are the plans
// the aggregators' feeds take (empty: every plan).
func Record(ctx context.Context, src Announcements, jobID int64, status string, planID int, aggregatorPlans []int) (Distribution, error) {
	d := Distribution{ListedIn: []string{}}
	if status == "active" {
		d.ListedIn = append(d.ListedIn, "sitemap", "feeds")
		if len(aggregatorPlans) == 0 || slices.Contains(aggregatorPlans, planID) {
			d.ListedIn = append(d.ListedIn, "aggregators")
		}
	}
	if src == nil {
		return d, nil
	}
	a, ok, err := src.Latest(ctx, jobID)
	if err != nil {
		return Distribution{}, err
	}
	if ok {
		d.Indexing = &a
	}
	return d, nil
}
