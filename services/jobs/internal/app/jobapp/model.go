package jobapp

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// createRequest is the body of POST /v2/jobs as sent, read field by field
// so that a wrong type is reported with every other problem at once. A field
// the document does not name is refused; status is accepted and has no
// effect (the spec's promise: the server decides the initial status).
type createRequest struct{ web.Fields }

// createFields are the fields of POST /v2/jobs in the order of the canonical
// form that the Idempotency-Key request hash is taken over.
var createFields = []string{"title", "company", "description", "job_type", "tags", "id_city", "city_name",
	"external_url", "apply_url", "is_remote", "inv_email", "currency", "sal_min", "sal_max", "id_space", "id_plan",
	"salary_period", "workplace_type", "external_ref"}

// MarshalJSON writes the canonical form: the known fields that were sent (a
// null included) in createFields order, compacted and HTML-escaped as
// encoding/json writes a json.RawMessage, so that an exact retry
// re-indented by another client library still hashes the same. Compact and
// HTMLEscape rather than json.Marshal per field (BenchmarkCreateRequest).
func (r createRequest) MarshalJSON() ([]byte, error) {
	var out, field bytes.Buffer
	out.WriteByte('{')
	for _, name := range createFields {
		raw := r.JSON(name)
		if len(raw) == 0 {
			continue
		}
		if raw[0] == '{' || raw[0] == '[' { // a scalar has no space to compact
			field.Reset()
			if err := json.Compact(&field, raw); err != nil {
				return nil, err
			}
			raw = field.Bytes()
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(strconv.AppendQuote(out.AvailableBuffer(), name))
		out.WriteByte(':')
		json.HTMLEscape(&out, raw)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// toInput converts the request to the business input, collecting the type
// problems and unknown fields. JSON null counts as absent.
func (r *createRequest) toInput() jobbus.CreateInput {
	in := jobbus.CreateInput{
		Title:       r.OptString("title"),
		Company:     r.OptString("company"),
		Description: r.OptString("description"),
		JobType:     r.OptString("job_type"),
		Tags:        r.OptString("tags"),
		IDCity:      r.OptInt("id_city"),
		CityName:    r.OptString("city_name"),
		ExternalURL: r.OptString("external_url"),
		ApplyURL:    r.OptString("apply_url"),
		IsRemote:    r.OptIntOrBool("is_remote"),
		InvEmail:    r.LooseString("inv_email"), // invalid is replaced, never rejected
		Currency:    r.OptString("currency"),
		SalMin:      r.OptInt("sal_min"),
		SalMax:      r.OptInt("sal_max"),
		IDSpace:     r.OptInt("id_space"),
		IDPlan:      r.OptInt("id_plan"),

		SalaryPeriod:  r.OptString("salary_period"),
		WorkplaceType: r.OptString("workplace_type"),
		ExternalRef:   r.OptString("external_ref"),
	}
	r.Ignore("status")
	in.TypeProblems = r.Problems(nil)
	return in
}

// cityDTO is the city of a creation result.
type cityDTO struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// createResultDTO is the spec's Job creation result.
type createResultDTO struct {
	JobID          int64   `json:"job_id"`
	ExternalRef    *string `json:"external_ref"`
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
		JobID: r.JobID, ExternalRef: r.ExternalRef, PageURL: r.PageURL, HashIdentifier: r.HashIdentifier, Status: r.Status, Action: r.Action,
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

// DecodeCreate reads a POST /v2/jobs body as the route does (an import
// source's position, importbus.Config.Decode): a body that is not a JSON
// object is a row with that problem.
func DecodeCreate(body []byte) jobbus.CreateInput {
	var r createRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return jobbus.CreateInput{TypeProblems: []string{"the job must be a JSON object"}}
	}
	return r.toInput()
}
