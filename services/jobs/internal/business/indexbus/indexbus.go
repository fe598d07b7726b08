// Package indexbus is the model of the search-engine notices (Google's
// Indexing API): which change of a job is a notice, and what a poster reads
// of them (the job's distribution record).
package indexbus

import "time"

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
