package jobbus

import (
	"fmt"
	"slices"
	"strings"
)

// Where a job is worked (workplace_type). IsRemote is WorkplaceRemote.
const (
	WorkplaceOnSite = "on_site"
	WorkplaceHybrid = "hybrid"
	WorkplaceRemote = "remote"
)

// WorkplaceTypes are the accepted workplace_type values.
var WorkplaceTypes = []string{WorkplaceOnSite, WorkplaceHybrid, WorkplaceRemote}

// DefaultSalaryPeriod is the period of a salary sent without one: the
// spec's salaries are annual.
const DefaultSalaryPeriod = "year"

// SalaryPeriods are the accepted salary_period values.
var SalaryPeriods = []string{"hour", "day", "week", "month", "year"}

// PeriodsPerYear annualises a salary for the salary_min filter: a full-time
// year of 52 weeks of 5 days of 8 hours. The same factors are in the
// generated column jobs.sal_annual (migrations/00048).
var PeriodsPerYear = map[string]int64{"hour": 2080, "day": 260, "week": 52, "month": 12, "year": 1}

// ValidWorkplaceType reports whether t is one of WorkplaceTypes.
func ValidWorkplaceType(t string) bool { return slices.Contains(WorkplaceTypes, t) }

// workplace decides a job's workplace_type from the request's
// workplace_type and is_remote (either may be absent; cur is what the job
// had, "" for a new one). is_remote alone derives it: 1 remote, 0 on site
// (or the job's hybrid, which is not remote either). Both given must agree.
func workplace(wt *string, remote *int64, cur string, p *[]string) string {
	out := cur
	if out == "" {
		out = WorkplaceOnSite
	}
	if remote != nil {
		switch *remote {
		case 0:
			if out == WorkplaceRemote {
				out = WorkplaceOnSite
			}
		case 1:
			out = WorkplaceRemote
		default:
			*p = append(*p, "is_remote must be 0 or 1")
			return out
		}
	}
	if wt == nil {
		return out
	}
	t := strings.ToLower(strings.TrimSpace(*wt))
	if !ValidWorkplaceType(t) {
		*p = append(*p, "workplace_type must be one of "+strings.Join(WorkplaceTypes, ", "))
		return out
	}
	if remote != nil && (*remote == 1) != (t == WorkplaceRemote) {
		*p = append(*p, fmt.Sprintf("workplace_type %s conflicts with is_remote %d: is_remote is 1 exactly when workplace_type is remote; send one of them", t, *remote))
		return out
	}
	return t
}

// salaryPeriod validates a salary_period (nil: cur, or the default).
func salaryPeriod(v *string, cur string, p *[]string) string {
	if cur == "" {
		cur = DefaultSalaryPeriod
	}
	if v == nil {
		return cur
	}
	s := strings.ToLower(strings.TrimSpace(*v))
	if !slices.Contains(SalaryPeriods, s) {
		*p = append(*p, "salary_period must be one of "+strings.Join(SalaryPeriods, ", "))
		return cur
	}
	return s
}

// PeriodOf is a job's salary period, the default for "" (a NewJob made
// before periods).
func PeriodOf(period string) string {
	if period == "" {
		return DefaultSalaryPeriod
	}
	return period
}

// WorkplaceOf is a job's workplace_type, from isRemote for "" (a NewJob
// made before workplace types).
func WorkplaceOf(wt string, isRemote bool) string {
	switch {
	case wt != "":
		return wt
	case isRemote:
		return WorkplaceRemote
	}
	return WorkplaceOnSite
}
