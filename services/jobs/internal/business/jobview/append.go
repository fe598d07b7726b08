package jobview

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// AppendJob appends the JSON of one listed job to b: JobOf(j) as
// encoding/json writes it without HTML escaping (jobapp's TestAppendJobIsEncodingJSON).
// Written by hand as the list writes one per job: see jobapp's BenchmarkAppendJob
// against BenchmarkAppendJobStdlib.
func AppendJob(b []byte, j *jobbus.Job, baseURL string) []byte {
	b = append(b, `{"id_job":`...)
	b = strconv.AppendInt(b, j.ID, 10)
	return append(appendJobFields(b, j, baseURL), '}')
}

// appendJobFields appends the fields of AppendJob after id_job, each
// after a comma.
func appendJobFields(b []byte, j *jobbus.Job, baseURL string) []byte {
	b = appendField(b, "title", j.Title)
	b = appendField(b, "company", j.Company)
	b = appendField(b, "job_type", j.JobType)
	b = appendField(b, "tags", j.Tags)
	b = append(b, `,"is_remote":`...)
	b = strconv.AppendBool(b, j.IsRemote)
	b = append(b, `,"page_url":"`...)
	pageStart := len(b)
	b = AppendEscaped(b, j.Slug)
	b = append(b, '-')
	b = strconv.AppendInt(b, j.ID, 10)
	pageLen := len(b) - pageStart
	b = append(b, '"')
	b = appendField(b, "external_url", j.ExternalURL)
	apply := ""
	if j.ApplyURL != nil {
		apply = *j.ApplyURL
	}
	b = appendField(b, "apply_url", apply)
	b = appendField(b, "company_logo", j.CompanyLogo)
	b = append(b, `,"date_added":"`...)
	b = j.DateAdded.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, `","expiration_date":"`...)
	b = j.ExpirationDate.UTC().AppendFormat(b, time.RFC3339)
	b = append(b, '"')
	b = appendField(b, "city_name", j.CityName)
	b = appendField(b, "city_slug", j.CitySlug)
	if j.SpaceName != nil {
		b = appendField(b, "space_name", *j.SpaceName)
	} else {
		b = append(b, `,"space_name":null`...)
	}
	b = appendSalary(b, "sal_min", j.SalMin)
	b = appendSalary(b, "sal_max", j.SalMax)
	b = appendField(b, "currency", j.Currency)
	b = appendField(b, "salary_period", j.SalaryPeriod)
	b = appendField(b, "workplace_type", j.WorkplaceType)
	if j.ExternalRef != nil {
		b = appendField(b, "external_ref", *j.ExternalRef)
	} else {
		b = append(b, `,"external_ref":null`...)
	}
	b = append(b, `,"url":"`...)
	b = AppendEscaped(b, baseURL)
	b = append(b, "/jobs/"...)
	// the page_url was appended escaped already: copy it from there
	b = append(b, b[pageStart:pageStart+pageLen]...)
	b = append(b, '"')
	if j.DistanceKm != nil {
		b = append(b, `,"distance_km":`...)
		b = strconv.AppendFloat(b, math.Round(*j.DistanceKm*100)/100, 'f', -1, 64)
	}
	return b
}

func appendSalary(b []byte, name string, v *int64) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, `":"`...)
	if v == nil {
		b = append(b, '0')
	} else {
		b = strconv.AppendInt(b, *v, 10)
	}
	return append(b, '"')
}

func appendField(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, `":"`...)
	b = AppendEscaped(b, v)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// AppendEscaped appends s as the inside of a JSON string: quotes,
// backslashes and control characters escaped, U+2028/U+2029 escaped for
// JavaScript consumers, invalid UTF-8 replaced by U+FFFD. Only \b and \f
// differ from encoding/json, which writes them short since Go 1.22.
func AppendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
