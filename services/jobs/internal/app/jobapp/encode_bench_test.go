package jobapp

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

func benchJob() jobbus.Job {
	apply, space := "https://example.com/apply?job=1", "Factory Görlitzer Park"
	salMin, salMax := int64(42000), int64(55000)
	now := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	return jobbus.Job{ID: 123456, Title: "Senior Community Manager (m/w/d)", Company: "Acme Coworking GmbH",
		JobType: "fulltime", Tags: "community,events,hospitality,front desk", IsRemote: false,
		Slug: "senior-community-manager-m-w-d-berlin", ExternalURL: "https://careers.example.com/jobs/1?ref=coworkjobs",
		ApplyURL: &apply, CompanyLogo: "acme.png", DateAdded: now, ExpirationDate: now.Add(30 * 24 * time.Hour),
		CityName: "Berlin", CitySlug: "berlin", SpaceName: &space, SalMin: &salMin, SalMax: &salMax, Currency: "EUR"}
}

// BenchmarkAppendJob is one row of GET /v2/jobs: the hand-written encoder
// the list and the stream share.
func BenchmarkAppendJob(b *testing.B) {
	j := benchJob()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendJob(buf[:0], &j, "https://coworkjobs.example")
	}
	if !json.Valid(buf) {
		b.Fatalf("invalid JSON: %s", buf)
	}
}

// BenchmarkAppendJobStdlib is the same row through encoding/json, for scale.
func BenchmarkAppendJobStdlib(b *testing.B) {
	j := benchJob()
	type row struct {
		ID             int64   `json:"id_job"`
		Title          string  `json:"title"`
		Company        string  `json:"company"`
		JobType        string  `json:"job_type"`
		Tags           string  `json:"tags"`
		IsRemote       bool    `json:"is_remote"`
		PageURL        string  `json:"page_url"`
		ExternalURL    string  `json:"external_url"`
		ApplyURL       string  `json:"apply_url"`
		CompanyLogo    string  `json:"company_logo"`
		DateAdded      string  `json:"date_added"`
		ExpirationDate string  `json:"expiration_date"`
		CityName       string  `json:"city_name"`
		CitySlug       string  `json:"city_slug"`
		SpaceName      *string `json:"space_name"`
		SalMin         string  `json:"sal_min"`
		SalMax         string  `json:"sal_max"`
		Currency       string  `json:"currency"`
		URL            string  `json:"url"`
	}
	b.ReportAllocs()
	for b.Loop() {
		page := jobbus.PageURL(j.Slug, j.ID)
		r := row{ID: j.ID, Title: j.Title, Company: j.Company, JobType: j.JobType, Tags: j.Tags, IsRemote: j.IsRemote,
			PageURL: page, ExternalURL: j.ExternalURL, ApplyURL: *j.ApplyURL, CompanyLogo: j.CompanyLogo,
			DateAdded: j.DateAdded.Format(time.RFC3339), ExpirationDate: j.ExpirationDate.Format(time.RFC3339),
			CityName: j.CityName, CitySlug: j.CitySlug, SpaceName: j.SpaceName, SalMin: "42000", SalMax: "55000",
			Currency: j.Currency, URL: "https://coworkjobs.example/jobs/" + page}
		if _, err := json.Marshal(&r); err != nil {
			b.Fatal(err)
		}
	}
}
