package jobapp

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// createRequest is the body of POST /v2/jobs as sent. Every field is kept
// raw so that a wrong type is reported with every other problem at once;
// unknown fields (status among them) are ignored.
type createRequest struct {
	Title       json.RawMessage `json:"title,omitempty"`
	Company     json.RawMessage `json:"company,omitempty"`
	Description json.RawMessage `json:"description,omitempty"`
	JobType     json.RawMessage `json:"job_type,omitempty"`
	Tags        json.RawMessage `json:"tags,omitempty"`
	IDCity      json.RawMessage `json:"id_city,omitempty"`
	CityName    json.RawMessage `json:"city_name,omitempty"`
	ExternalURL json.RawMessage `json:"external_url,omitempty"`
	ApplyURL    json.RawMessage `json:"apply_url,omitempty"`
	IsRemote    json.RawMessage `json:"is_remote,omitempty"`
	InvEmail    json.RawMessage `json:"inv_email,omitempty"`
	Currency    json.RawMessage `json:"currency,omitempty"`
	SalMin      json.RawMessage `json:"sal_min,omitempty"`
	SalMax      json.RawMessage `json:"sal_max,omitempty"`
	IDSpace     json.RawMessage `json:"id_space,omitempty"`
	IDPlan      json.RawMessage `json:"id_plan,omitempty"`
}

// toInput converts the raw request to the business input, collecting type
// problems. JSON null counts as absent.
func (r createRequest) toInput() jobbus.CreateInput {
	var in jobbus.CreateInput
	p := &in.TypeProblems
	in.Title = rawString(r.Title, "title", p)
	in.Company = rawString(r.Company, "company", p)
	in.Description = rawString(r.Description, "description", p)
	in.JobType = rawString(r.JobType, "job_type", p)
	in.Tags = rawString(r.Tags, "tags", p)
	in.IDCity = rawInt(r.IDCity, "id_city", p)
	in.CityName = rawString(r.CityName, "city_name", p)
	in.ExternalURL = rawString(r.ExternalURL, "external_url", p)
	in.ApplyURL = rawString(r.ApplyURL, "apply_url", p)
	in.IsRemote = rawIntOrBool(r.IsRemote, "is_remote", p)
	in.InvEmail = rawString(r.InvEmail, "inv_email", nil) // invalid is replaced, never rejected
	in.Currency = rawString(r.Currency, "currency", p)
	in.SalMin = rawInt(r.SalMin, "sal_min", p)
	in.SalMax = rawInt(r.SalMax, "sal_max", p)
	in.IDSpace = rawInt(r.IDSpace, "id_space", p)
	in.IDPlan = rawInt(r.IDPlan, "id_plan", p)
	return in
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func rawString(raw json.RawMessage, name string, p *[]string) *string {
	if isNull(raw) {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		if p != nil {
			*p = append(*p, name+" must be a string")
		}
		return nil
	}
	return &s
}

// rawInt accepts a JSON number with no fractional part (5, 5.0 and 5e0 are
// all integers to the document's `type: integer`). A string, even "5", is
// refused: the document says integer, and a client or proxy that validates
// against it refuses to send one, so the server must not quietly take it.
func rawInt(raw json.RawMessage, name string, p *[]string) *int64 {
	if isNull(raw) {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] == '"' { // json.Number would take a quoted number
		*p = append(*p, name+" must be an integer (a JSON number, not a string)")
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return &v
		}
		// 5.0 or 5e0: exact as a float64 below 2^53, which holds every valid
		// id and salary; a larger one is out of every field's range anyway.
		if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			v := int64(f)
			return &v
		}
	}
	*p = append(*p, name+" must be an integer")
	return nil
}

// rawIntOrBool is rawInt that also takes true/false as 1/0.
func rawIntOrBool(raw json.RawMessage, name string, p *[]string) *int64 {
	var b bool
	if !isNull(raw) && json.Unmarshal(raw, &b) == nil {
		v := int64(0)
		if b {
			v = 1
		}
		return &v
	}
	return rawInt(raw, name, p)
}

// jobDTO is the spec's Job: a row of GET /v2/jobs (appendJob writes it) and
// the first fields of GET /v2/jobs/{id_job}.
type jobDTO struct {
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
	URL            string    `json:"url"`
	// DistanceKm is set in a listing near a point: km to 10 m, as the
	// spaces' distance_km.
	DistanceKm *float64 `json:"distance_km,omitempty"`
}

// toJobDTO converts j, whose public page is url.
func toJobDTO(j *jobbus.Job, url string) jobDTO {
	out := jobDTO{
		IDJob: j.ID, Title: j.Title, Company: j.Company, JobType: j.JobType, Tags: j.Tags, IsRemote: j.IsRemote,
		PageURL: jobbus.PageURL(j.Slug, j.ID), ExternalURL: j.ExternalURL, CompanyLogo: j.CompanyLogo,
		DateAdded: j.DateAdded.UTC().Truncate(time.Second), ExpirationDate: j.ExpirationDate.UTC().Truncate(time.Second),
		CityName: j.CityName, CitySlug: j.CitySlug, SpaceName: j.SpaceName,
		SalMin: salaryText(j.SalMin), SalMax: salaryText(j.SalMax), Currency: j.Currency, URL: url,
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

// cityDTO is the city of a creation result.
type cityDTO struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// createResultDTO is the spec's Job creation result.
type createResultDTO struct {
	JobID          int64   `json:"job_id"`
	PageURL        string  `json:"page_url"`
	HashIdentifier string  `json:"hash_identifier"`
	Status         string  `json:"status"`
	Action         string  `json:"action"`
	DedupeHash     string  `json:"dedupe_hash"`
	IsPaid         bool    `json:"is_paid"`
	City           cityDTO `json:"city"`
	ApplyURL       *string `json:"apply_url"`
	PlanPrice      int     `json:"plan_price"`
	ExpirationDays int     `json:"expiration_days"`
	Message        string  `json:"message"`
	ViewURL        *string `json:"view_url"`
	PaymentURL     *string `json:"payment_url"`
	EditURL        string  `json:"edit_url"`
	UnpublishURL   string  `json:"unpublish_url"`
}

func toCreateResultDTO(r jobbus.CreateResult) createResultDTO {
	return createResultDTO{
		JobID: r.JobID, PageURL: r.PageURL, HashIdentifier: r.HashIdentifier, Status: r.Status, Action: r.Action,
		DedupeHash: r.DedupeHash, IsPaid: r.IsPaid, City: cityDTO{ID: r.City.ID, Name: r.City.Name},
		ApplyURL: r.ApplyURL, PlanPrice: r.PlanPrice, ExpirationDays: r.ExpirationDays, Message: r.Message,
		ViewURL: r.ViewURL, PaymentURL: r.PaymentURL, EditURL: r.EditURL, UnpublishURL: r.UnpublishURL,
	}
}

// feedItemDTO is one entry of the shared feed (web.Feed) with the _job extension.
type feedItemDTO struct {
	web.FeedItem
	Job feedJobDTO `json:"_job"`
}

type feedJobDTO struct {
	Company  string `json:"company"`
	CityName string `json:"city_name"`
	JobType  string `json:"job_type"`
	IsRemote bool   `json:"is_remote"`
}
