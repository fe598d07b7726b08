package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// BenchmarkSignInRequest asks for sign-in links through the gateway, in
// turn for an address that administers a space and for one that does not,
// each a fresh address (the hourly limit never applies), and reports each
// kind's time per request (known-ns/req, unknown-ns/req): interleaved, so
// that the machine's noise falls on both alike. The answer's cost must not
// tell them apart (docs/benchmarks.md, "Dashboard sign-in").
func BenchmarkSignInRequest(b *testing.B) {
	c := &http.Client{}
	pre := "bench" + strings.Repeat("x", 38) // 43 characters, as a browser's token
	var spent [2]time.Duration
	n := 0
	for b.Loop() {
		for k := range 2 {
			known := (n+k)%2 == 0 // alternate which goes first
			email := "bench-" + suite.RandomHex(6) + "@bench.example"
			if known {
				if _, err := db.Exec(context.Background(), `INSERT INTO directory.space_admins (space_id, email, role) VALUES (1, $1, 'editor')`, email); err != nil {
					b.Fatal(err)
				}
			}
			req, _ := http.NewRequest(http.MethodPost, sys.URL["gateway"]+"/dashboard/sign-in",
				strings.NewReader(url.Values{"email": {email}, "_csrf": {pre}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", sys.URL["gateway"])
			req.Header.Set("Cookie", "cj_dash_pre="+pre) // as the browser sends it back
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			d := time.Since(start)
			if resp.StatusCode != 200 {
				b.Fatalf("%d", resp.StatusCode)
			}
			if known {
				spent[0] += d
			} else {
				spent[1] += d
			}
		}
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "known-ns/req")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "unknown-ns/req")
	}
}
