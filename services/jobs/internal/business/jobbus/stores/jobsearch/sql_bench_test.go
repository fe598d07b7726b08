package jobsearch

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// BenchmarkListSQL builds the statement of a search listing, as every
// GET /v2/jobs?q= does.
func BenchmarkListSQL(b *testing.B) {
	f := jobbus.ListFilter{
		Search: jobbus.Search{Words: []string{"go", "dev"}, Prefix: []bool{false, true}, Fuzz: []int{0, 1}},
		Sort:   jobbus.SortRelevance, CitySlug: "paris", Tag: "go", Near: &geo.Near{Lat: 48.85, Lon: 2.35, RadiusKm: 25}, Limit: 20,
	}
	b.ReportAllocs()
	for b.Loop() {
		listSQL(planned(f, nil))
	}
}

// BenchmarkCountKey names a listing's total, as every paginated GET /v2/jobs
// does when totals are kept.
func BenchmarkCountKey(b *testing.B) {
	f := jobbus.ListFilter{
		Search: jobbus.Search{Words: []string{"community", "manager"}, Prefix: []bool{false, true}, Fuzz: []int{2, 1}},
		Sort:   jobbus.SortRelevance, CitySlug: "paris", Limit: 20,
	}
	b.ReportAllocs()
	for b.Loop() {
		Key(f)
	}
}

// BenchmarkWalkSQLKept builds a search's page with its plan kept, as every
// paginated search request but the first under new versions does: the plan's
// queries and their nine field-held copies (weighted) as parameters.
func BenchmarkWalkSQLKept(b *testing.B) {
	f := planned(jobbus.ListFilter{
		Search: jobbus.Search{Words: []string{"event", "manager"}, Prefix: []bool{false, true}, Fuzz: []int{1, 1}},
		Sort:   jobbus.SortRelevance, Limit: 20,
	}, &Plan{Match: `( 'event' | 'events' ) & ( 'manag' | 'manager' | 'manager':* )`,
		Exact: []string{`'event'`, `'manager'`}, Stem: []string{`'event'`, `'manag' | 'manager' | 'manager':*`},
		AnyQ: []string{`'event' | 'events'`, `'manag' | 'manager' | 'manager':*`}, Phrase: []string{},
		TopExact: `'event':A & 'manager':A`, Walk: true, TopScore: 25})
	b.ReportAllocs()
	for b.Loop() {
		walkSQL(f)
	}
}
