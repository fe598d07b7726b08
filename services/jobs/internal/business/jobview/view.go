// Package jobview renders jobs and their changes as the API shows them:
// GET /v2/jobs rows (AppendJob), GET /v2/jobs/{id_job} (JobDetail), the
// changes feed and the webhooks' bodies (Change, ChangeJSON). It is
// business, not HTTP: the worker renders webhook bodies with it.
package jobview

import (
	"math"
	"strconv"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Job is the spec's Job: a row of GET /v2/jobs (appendJob writes it) and
// the first fields of GET /v2/jobs/{id_job}.
type Job struct {
	IDJob          int64     `json:"id_job"`
	Title          string    `json:"title"`
	Company        string    `json:"company"`
	JobType        string    `json:"job_type"`
	Tags           string    `json:"tags"`
	IsRemote       bool      `json:"is_remote"`
	PageURL        string    `json:"page_url"`
	ExternalURL    string    `json:"external_url"`
	ApplyURL       string    `json:"apply_url"`
	CompanyLogo    string    `json:"company_logo"`
	DateAdded      time.Time `json:"date_added"`
	ExpirationDate time.Time `json:"expiration_date"`
	CityName       string    `json:"city_name"`
	CitySlug       string    `json:"city_slug"`
	SpaceName      *string   `json:"space_name"`
	SalMin         string    `json:"sal_min"`
	SalMax         string    `json:"sal_max"`
	Currency       string    `json:"currency"`
	SalaryPeriod   string    `json:"salary_period"`
	WorkplaceType  string    `json:"workplace_type"`
	ExternalRef    *string   `json:"external_ref"`
	URL            string    `json:"url"`
	// DistanceKm is set in a listing near a point: km to 10 m, as the
	// spaces' distance_km.
	DistanceKm *float64 `json:"distance_km,omitempty"`
}

// JobOf converts j, whose public page is url.
func JobOf(j *jobbus.Job, url string) Job {
	out := Job{
		IDJob: j.ID, Title: j.Title, Company: j.Company, JobType: j.JobType, Tags: j.Tags, IsRemote: j.IsRemote,
		PageURL: jobbus.PageURL(j.Slug, j.ID), ExternalURL: j.ExternalURL, CompanyLogo: j.CompanyLogo,
		DateAdded: j.DateAdded.UTC().Truncate(time.Second), ExpirationDate: j.ExpirationDate.UTC().Truncate(time.Second),
		CityName: j.CityName, CitySlug: j.CitySlug, SpaceName: j.SpaceName,
		SalMin: salaryText(j.SalMin), SalMax: salaryText(j.SalMax), Currency: j.Currency,
		SalaryPeriod: j.SalaryPeriod, WorkplaceType: j.WorkplaceType, ExternalRef: j.ExternalRef, URL: url,
	}
	if j.ApplyURL != nil {
		out.ApplyURL = *j.ApplyURL
	}
	if j.DistanceKm != nil {
		km := math.Round(*j.DistanceKm*100) / 100
		out.DistanceKm = &km
	}
	return out
}

func salaryText(v *int64) string {
	if v == nil {
		return "0"
	}
	return strconv.FormatInt(*v, 10)
}

// Plan names a job's plan.
type Plan struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// JobDetail is GET /v2/jobs/{id_job}: every field of a listed job, its
// description, status and plan, and for the job's owner its links (the edit,
// unpublish and payment links carry the edit capability, so nobody else
// sees them).
type JobDetail struct {
	Job
	Description  string    `json:"description"`
	Status       string    `json:"status"`
	UpdatedAt    time.Time `json:"updated_at"`
	Plan         Plan      `json:"plan"`
	PlanPrice    int       `json:"plan_price"`
	IsPaid       bool      `json:"is_paid"`
	ViewURL      *string   `json:"view_url"`
	EditURL      *string   `json:"edit_url,omitempty"`
	UnpublishURL *string   `json:"unpublish_url,omitempty"`
	PaymentURL   *string   `json:"payment_url,omitempty"`
	// Distribution is the owner's only, as the links above.
	Distribution *indexbus.Distribution `json:"distribution,omitempty"`
}

func DetailOf(bus *jobbus.Business, d jobbus.Detail, owner bool) JobDetail {
	l := bus.Links(d)
	out := JobDetail{
		Job:         JobOf(&d.Job, l.URL),
		Description: d.Description, Status: d.Status, UpdatedAt: d.UpdatedAt.UTC().Truncate(time.Second),
		Plan: Plan{ID: d.Plan.ID, Name: d.Plan.Name}, PlanPrice: d.Plan.Price, IsPaid: d.IsPaid, ViewURL: l.ViewURL,
	}
	if owner {
		out.EditURL, out.UnpublishURL, out.PaymentURL = &l.EditURL, &l.UnpublishURL, l.PaymentURL
	}
	return out
}

// Event is what happened in one change.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Version    int64     `json:"version"`
	OccurredAt time.Time `json:"occurred_at"`
}

func EventOf(e jobbus.JobEvent) Event {
	return Event{ID: e.ID, Type: e.Type, Version: e.Version, OccurredAt: e.OccurredAt.UTC().Truncate(time.Millisecond)}
}

// Change is one entry of GET /v2/jobs/changes: the job as GET
// /v2/jobs/{id_job} shows it to the caller, or only its id and status for a
// job the caller may no longer read, with the event. The outer id_job and
// status shadow the job's own (equal) ones, so both shapes carry them.
type Change struct {
	*JobDetail
	IDJob  int64  `json:"id_job"`
	Status string `json:"status"`
	Event  Event  `json:"event"`
}

type Changes struct {
	Changes    []Change `json:"changes"`
	NextCursor string   `json:"next_cursor"`
}

// ChangeOf renders one change for who; the owner's links only for a live
// key that owns the job.
func ChangeOf(bus *jobbus.Business, ce jobbus.ChangeEntry, who jobbus.Caller, live bool) Change {
	out := Change{IDJob: ce.Event.JobID, Status: ce.Status, Event: EventOf(ce.Event)}
	if ce.Job != nil {
		d := DetailOf(bus, *ce.Job, live && jobbus.Owns(who, *ce.Job))
		out.JobDetail = &d
	}
	return out
}
