package alertmail

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// TestWordAlertsAreTheListing: alerts whose search is words only (plus
// job_type or remote) are keyed by a word, not compared with every job, and
// still match exactly the jobs GET /v2/jobs?q= lists: stems, typos, the
// last word as a prefix, several words, exclusions.
func TestWordAlertsAreTheListing(t *testing.T) {
	r, _ := fixture(t)
	ctx := context.Background()
	run := alertbus.NewNonce()[:8]
	searches := []string{"q=barista", "q=baristas", "q=barsita", "q=bar", "q=community+host", "q=host+community", //nolint:misspell // a typo on purpose
		"q=barista+-chef", "q=barista&remote=true", "q=manager&job_type=fulltime", "q=%22community+host%22+barista",
		"q=gardener", "q=barista&workplace_type=remote", "q=barista&workplace_type=on_site"}
	alerts := make([]alertbus.Alert, len(searches))
	for i, s := range searches {
		alerts[i] = saved(t, r, "w"+string(rune('a'+i))+"-"+run+"@seeker.example", s, true)
		var pkey string
		if err := pool.QueryRow(ctx, `SELECT pkey FROM alerts WHERE id = $1`, alerts[i].ID).Scan(&pkey); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(pkey, "word:") {
			t.Errorf("%s: key %q, want a word key", s, pkey)
		}
	}
	drain(t, r)
	var jobs []int64
	for _, j := range []struct {
		title  string
		remote bool
	}{
		{"Head Barista", false}, {"Baristas Wanted", true}, {"Barsita Shift", false}, {"Bartender", false}, //nolint:misspell // a typo on purpose
		{"Community Host", false}, {"Host of the Community", true}, {"Chef and Barista", false},
		{"Community Host and Barista", false}, {"Office Manager", false}, {"Gardner", false}, {"Accountant", false},
	} {
		jobs = append(jobs, newJob(t, j.title+" "+run, "words-"+run, "", j.remote))
	}
	drain(t, r)
	for i, a := range alerts {
		f, _ := Parse(a.Search)
		f.JobIDs, f.Sort = jobs, jobbus.SortNewest
		listed, err := alertdb.ListIDs(ctx, pool, f)
		if err != nil {
			t.Fatal(err)
		}
		var matched []int64
		rows, err := pool.Query(ctx, `SELECT job_id FROM alert_matches WHERE alert_id = $1 AND job_id = ANY($2) ORDER BY job_id`, a.ID, jobs)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			_ = rows.Scan(&id)
			matched = append(matched, id)
		}
		rows.Close()
		slices.Sort(listed)
		if !slices.Equal(matched, listed) {
			t.Errorf("%s: matched %v, the listing %v", searches[i], matched, listed)
		}
		if len(listed) == 0 && searches[i] != "q=gardener" && searches[i] != "q=bar" {
			t.Logf("%s lists none of the jobs", searches[i])
		}
	}
}
