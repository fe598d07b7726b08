package dashboard

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var applyRE = regexp.MustCompile(`id="apply" href="[^"]*(/go/[^"]+)"`)

// browserGet is a GET as a browser (a Go client is counted as a bot), not
// following redirects.
func browserGet(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", sys.URL["gateway"]+path, nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A Pro space's page shows each job's views and apply clicks of the last 30
// days with a small SVG chart; a non-Pro space's page says they come with
// the Pro plan.
func TestDashboardShowsJobNumbers(t *testing.T) {
	b := signIn(t, addAdmin(t, 1, "owner"))
	pro := sys.Keys["space 1 (Pro) key"]
	status, job := apiCall(t, "POST", "/v2/jobs", pro, fmt.Sprintf(`{"title":"Counted Host %s","company":"Factory",
		"description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin","apply_url":"https://apply.example/d"}`,
		suite.RandomHex(3)))
	if status != 201 || job["view_url"] == nil {
		t.Fatalf("create job: %d %v", status, job)
	}
	jobID := int64(job["job_id"].(float64))
	view := job["view_url"].(string)
	st, page := browserGet(t, view[strings.Index(view, "/jobs/"):])
	m := applyRE.FindStringSubmatch(page)
	if st != 200 || m == nil {
		t.Fatalf("job page: %d, apply link %v", st, m)
	}
	if st, _ := browserGet(t, strings.ReplaceAll(m[1], "&amp;", "&")); st != http.StatusFound {
		t.Fatalf("apply: %d", st)
	}
	want := "1 views (1 unique)</span><br><span class=\"clicks\">1 apply clicks (1 unique)"
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		body = b.get("/dashboard/spaces/1").body
		i := strings.Index(body, fmt.Sprintf(`id="job-%d"`, jobID))
		if i >= 0 {
			row := body[i:]
			row = row[:strings.Index(row, "</tr>")]
			if strings.Contains(row, want) && strings.Contains(row, "<svg") && strings.Contains(row, "<rect") {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(body, want) {
		t.Fatalf("the job's numbers are not on the page within 30 s:\n%s", body)
	}
	nonPro := signIn(t, addAdmin(t, 2, "owner"))
	if p := nonPro.get("/dashboard/spaces/2"); !strings.Contains(p.body, "included in the Pro plan") || strings.Contains(p.body, "<svg") {
		t.Errorf("non-Pro space page: %s", p.body)
	}
}
