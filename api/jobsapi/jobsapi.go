// Package jobsapi is the jobs service's internal API on the wire
// (docs/internal-api.md): the jobs service writes these shapes and the
// gateway's dashboard reads them, so that neither imports the other.
package jobsapi

import "time"

// SpaceJob is one job of GET /internal/spaces/{id}/jobs: a space's job in
// any status, with its links and the transitions the state machine allows
// it now (publish, pause, resume, relist, close, unpublish).
type SpaceJob struct {
	ID             int64     `json:"id_job"`
	Title          string    `json:"title"`
	Company        string    `json:"company"`
	CityName       string    `json:"city_name"`
	Status         string    `json:"status"`
	PlanName       string    `json:"plan_name"`
	PlanPrice      int       `json:"plan_price"`
	PlanCurrency   string    `json:"plan_currency"`
	IsPaid         bool      `json:"is_paid"`
	DateAdded      time.Time `json:"date_added"`
	ExpirationDate time.Time `json:"expiration_date"`
	UpdatedAt      time.Time `json:"updated_at"`
	URL            string    `json:"url"`
	EditURL        string    `json:"edit_url"`
	ViewURL        *string   `json:"view_url"`
	PaymentURL     *string   `json:"payment_url"`
	Actions        []string  `json:"actions"`
}

// SpaceJobs is the answer of GET /internal/spaces/{id}/jobs, newest first.
type SpaceJobs struct {
	Jobs []SpaceJob `json:"jobs"`
}
