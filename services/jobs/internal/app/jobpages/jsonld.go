package jobpages

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// jobPosting is schema.org's JobPosting with what Google for Jobs requires
// and recommends that the jobs data holds.
type jobPosting struct {
	Context            string       `json:"@context"`
	Type               string       `json:"@type"`
	Title              string       `json:"title"`
	Description        string       `json:"description"`
	DatePosted         string       `json:"datePosted"`
	ValidThrough       string       `json:"validThrough"`
	EmploymentType     string       `json:"employmentType,omitempty"`
	HiringOrganization organization `json:"hiringOrganization"`
	// An on-site job has a place; a remote one says where its applicants
	// may live instead.
	JobLocation                   *place          `json:"jobLocation,omitempty"`
	JobLocationType               string          `json:"jobLocationType,omitempty"`
	ApplicantLocationRequirements *area           `json:"applicantLocationRequirements,omitempty"`
	BaseSalary                    *monetaryAmount `json:"baseSalary,omitempty"`
	Identifier                    propertyValue   `json:"identifier"`
	URL                           string          `json:"url"`
}

type organization struct {
	Type string `json:"@type"`
	Name string `json:"name"`
	Logo string `json:"logo,omitempty"`
}

type place struct {
	Type    string        `json:"@type"`
	Address postalAddress `json:"address"`
}

type postalAddress struct {
	Type            string `json:"@type"`
	AddressLocality string `json:"addressLocality"`
	AddressCountry  string `json:"addressCountry,omitempty"` // ISO 3166-1 alpha-2
}

// area is where applicants may live: a Country (or, when the country is not
// known, the City).
type area struct {
	Type string `json:"@type"`
	Name string `json:"name"`
}

type monetaryAmount struct {
	Type     string            `json:"@type"`
	Currency string            `json:"currency"`
	Value    quantitativeValue `json:"value"`
}

type quantitativeValue struct {
	Type     string `json:"@type"`
	MinValue *int64 `json:"minValue,omitempty"`
	MaxValue *int64 `json:"maxValue,omitempty"`
	UnitText string `json:"unitText"`
}

type propertyValue struct {
	Type  string `json:"@type"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// employmentTypes maps job_type to schema.org's employmentType values.
var employmentTypes = map[string]string{
	"fulltime":   "FULL_TIME",
	"parttime":   "PART_TIME",
	"freelance":  "CONTRACTOR",
	"internship": "INTERN",
}

// salaryRange returns the positive bounds of a job's salary (nil for a bound
// not given or 0, which the API answers for "no salary"); ok when there is
// at least one.
func salaryRange(d jobbus.Detail) (lo, hi *int64, ok bool) {
	if d.SalMin != nil && *d.SalMin > 0 {
		v := *d.SalMin
		lo = &v
	}
	if d.SalMax != nil && *d.SalMax > 0 {
		v := *d.SalMax
		hi = &v
	}
	return lo, hi, lo != nil || hi != nil
}

// newJobPosting is d's JobPosting; its names are shown by search engines as
// the page shows them, without bidi controls.
func newJobPosting(d jobbus.Detail, url string) jobPosting {
	city := stripBidi(d.CityName)
	jp := jobPosting{
		Context: "https://schema.org/", Type: "JobPosting",
		Title: stripBidi(d.Title), Description: d.Description,
		DatePosted:         d.DateAdded.UTC().Format(time.RFC3339),
		ValidThrough:       d.ExpirationDate.UTC().Format(time.RFC3339),
		EmploymentType:     employmentTypes[d.JobType],
		HiringOrganization: organization{Type: "Organization", Name: stripBidi(d.Company)},
		Identifier:         propertyValue{Type: "PropertyValue", Name: "coworkjobs", Value: strconv.FormatInt(d.ID, 10)},
		URL:                url,
	}
	if absoluteHTTP(d.CompanyLogo) {
		jp.HiringOrganization.Logo = d.CompanyLogo
	}
	if d.WorkplaceType == jobbus.WorkplaceRemote || d.IsRemote {
		// Google for Jobs wants the country applicants may work from; the
		// city's country is the one the poster named. Jobs written before
		// the directory sent countries fall back to the city.
		jp.JobLocationType = "TELECOMMUTE"
		jp.ApplicantLocationRequirements = &area{Type: "Country", Name: d.CityCountry}
		if d.CityCountry == "" {
			jp.ApplicantLocationRequirements = &area{Type: "City", Name: city}
		}
	} else {
		jp.JobLocation = &place{Type: "Place", Address: postalAddress{Type: "PostalAddress", AddressLocality: city,
			AddressCountry: d.CityCountry}}
	}
	if lo, hi, ok := salaryRange(d); ok {
		jp.BaseSalary = &monetaryAmount{Type: "MonetaryAmount", Currency: d.Currency,
			Value: quantitativeValue{Type: "QuantitativeValue", MinValue: lo, MaxValue: hi, UnitText: unitText(d.SalaryPeriod)}}
	}
	return jp
}

// absoluteHTTP reports whether s is an absolute http(s) URL.
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// jsonLD encodes v for a <script type="application/ld+json"> element.
// encoding/json writes <, > and & as \u003c, \u003e and \u0026 (and U+2028,
// U+2029 escaped), so no string in it can close the element or open a
// comment; the result is valid JSON and is inserted as is.
func jsonLD(v any) (template.JS, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return template.JS(bytes.TrimSpace(buf.Bytes())), nil //nolint:gosec // G203: JSON with <, >, & escaped (above)
}

// unitText is schema.org's unit of a salary period: HOUR, DAY, WEEK, MONTH
// or YEAR (a job stored before periods is annual).
func unitText(period string) string {
	if period == "" {
		period = jobbus.DefaultSalaryPeriod
	}
	return strings.ToUpper(period)
}
