package jobsearch

import (
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// TestCountKey checks that every listing that counts other jobs has a total
// of its own name, and that what does not change the count (the search plan
// kept with it, the page, the order) does not change the name.
func TestCountKey(t *testing.T) {
	search := func(words ...string) jobbus.Search {
		s := jobbus.Search{Words: words}
		for range words {
			s.Prefix, s.Fuzz = append(s.Prefix, false), append(s.Fuzz, 1)
		}
		return s
	}
	prefixed := search("community")
	prefixed.Prefix[0] = true
	salary := int64(50000)
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	distinct := []jobbus.ListFilter{
		{},
		{Search: search("community")},
		{Search: prefixed},
		{Search: search("ab", "c")},
		{Search: search("a", "bc")},
		{Search: jobbus.Search{Phrases: []string{"community manager"}}},
		{Search: jobbus.Search{Excluded: []string{"community"}}},
		{CitySlug: "berlin"},
		{CitySlug: "berlin", JobType: "fulltime"},
		{SpaceID: 1},
		{SpaceID: 12},
		{Currency: "EUR", SalaryMin: &salary},
		{Tag: "1"},
		{PostedSince: since},
		{Near: &geo.Near{Lat: 52.5, Lon: 13.4, RadiusKm: 50}},
		{Near: &geo.Near{Lat: 52.5, Lon: 13.4, RadiusKm: 51}},
	}
	seen := map[string]int{}
	for i, f := range distinct {
		k := Key(f)
		if j, ok := seen[k]; ok {
			t.Errorf("filters %d (%+v) and %d (%+v) share the total %s", i, f, j, distinct[j], k)
		}
		seen[k] = i
		same := f
		same.Limit, same.Offset, same.Sort = 20, 40, jobbus.SortNewest
		same.Reader = jobbus.Reader{KeyID: 7}
		if Key(same) != k {
			t.Errorf("filters %d: the page, the order or the reader changed the total's name", i)
		}
	}
}
