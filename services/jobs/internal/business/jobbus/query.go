package jobbus

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/geo"
)

// The search text's bounds.
const (
	MinQueryLen = 2
	MaxQueryLen = 200
)

var slugRE = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// ParseQuery validates the search of GET /v2/jobs (its filters, near and
// radius_km, currency and salary_min) read by get: the one grammar a listing
// and a saved alert share. Every problem is returned, none ignored.
func ParseQuery(get func(string) string) (ListFilter, []string) {
	var f ListFilter
	p := ParseFilters(get, &f)
	if n, ok, problems := geo.Parse(get("near"), get("radius_km")); ok {
		f.Near = &n
	} else {
		p = append(p, problems...)
	}
	if v := get("currency"); v != "" {
		cur := strings.ToUpper(v)
		if !slices.Contains(Currencies, cur) {
			p = append(p, "currency must be one of "+strings.Join(Currencies, ", "))
		}
		f.Currency = cur
	}
	if v := get("salary_min"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || n < 0 || n > MaxSalary:
			p = append(p, fmt.Sprintf("salary_min must be an integer between 0 and %d", MaxSalary))
		case f.Currency == "":
			p = append(p, "salary_min needs currency: salaries are compared without conversion")
		default:
			f.SalaryMin = &n
		}
	}
	return f, p
}

// ParseFilters reads the filters GET /v2/jobs and the jobs feeds share (q,
// tag, job_type, remote, workplace_type, city) into f, and returns their problems.
func ParseFilters(get func(string) string, f *ListFilter) []string {
	var p []string
	if q := get("q"); strings.TrimSpace(q) != "" {
		n := utf8.RuneCountInString(strings.TrimSpace(q))
		// What is searched is letters and digits; the rest separates words.
		letters := strings.Count(strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return 'x'
			}
			return -1
		}, q), "x")
		switch {
		case !utf8.ValidString(q):
			p = append(p, "q must be valid UTF-8 text")
		case n > MaxQueryLen:
			p = append(p, fmt.Sprintf("q must be at most %d characters", MaxQueryLen))
		case letters < MinQueryLen:
			p = append(p, fmt.Sprintf("q must contain at least %d letters or digits", MinQueryLen))
		default:
			s, _ := ParseSearch(q)
			switch {
			case s.Terms() > MaxSearchTerms:
				p = append(p, fmt.Sprintf("q must contain at most %d words", MaxSearchTerms))
			default:
				f.Search = s
			}
		}
	}
	if v := get("tag"); v != "" {
		tags := NormalizeTags(v)
		if len(tags) != 1 || utf8.RuneCountInString(tags[0]) > MaxTagLen {
			p = append(p, fmt.Sprintf("tag must be one tag of at most %d characters", MaxTagLen))
		} else {
			f.Tag = tags[0]
		}
	}
	// job_type is case-insensitive as on the write path (JobTypeInput).
	if t := strings.ToLower(strings.TrimSpace(get("job_type"))); t != "" {
		if !ValidJobType(t) {
			p = append(p, "job_type must be one of "+strings.Join(JobTypes, ", "))
		}
		f.JobType = t
	}
	switch strings.ToLower(get("remote")) {
	case "", "0", "false":
	case "1", "true":
		f.Remote = true
	default:
		p = append(p, "remote must be one of 1, true, 0, false")
	}
	if t := strings.ToLower(strings.TrimSpace(get("workplace_type"))); t != "" {
		if !ValidWorkplaceType(t) {
			p = append(p, "workplace_type must be one of "+strings.Join(WorkplaceTypes, ", "))
		}
		f.WorkplaceType = t
	}
	if city := strings.ToLower(get("city")); city != "" {
		if len(city) > 100 || !slugRE.MatchString(city) {
			p = append(p, "city must be a city slug: lowercase letters and digits separated by hyphens")
		}
		f.CitySlug = city
	}
	return p
}
