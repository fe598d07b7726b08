package alerts

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// BenchmarkInstantMail is the instant bound: jobs published through
// the gateway at ALERTS_BENCH_RATE a second (default 10) for
// ALERTS_BENCH_SECONDS (default 60), each matching one confirmed instant
// alert, and the time from each publish's 201 to its mail's file in the
// mail catcher (matching, outbox, Temporal workflow, SMTP), with the
// worker's production intervals. Bounded: publishing stops after the
// period, the wait for the mails after 3 minutes more. Run with
// -benchtime 1x; docs/benchmarks.md has the figures.
func BenchmarkInstantMail(b *testing.B) {
	rate, seconds := envInt("ALERTS_BENCH_RATE", 10), envInt("ALERTS_BENCH_SECONDS", 5) // make bench-alerts: 60
	temporal := faults.Temporal(b)
	smtpAddr, dir := mailcatcher.StartTest(b)
	sys := suite.StartTest(b, suite.Options{
		Name: "alerts-bench", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtpAddr,
			"WRITE_RATE_LIMIT_PER_MINUTE=100000", "KEY_MAX_RATE_LIMIT_PER_MINUTE=100000"},
	})
	gw, pro := sys.URL["gateway"], sys.Keys["space 1 (Pro) key"]
	seeker := "bench-" + suite.RandomHex(4) + "@example.com"
	if status, raw := suite.Do(b, "POST", gw+"/v2/alerts", "", fmt.Sprintf(`{"email":%q,"city":"berlin","q":"benchhost"}`, seeker)); status != 202 {
		b.Fatalf("create alert: %d %s", status, raw)
	}
	var confirm []*mailcatcher.Mail
	for deadline := time.Now().Add(time.Minute); len(confirm) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var err error
		if confirm, err = mailcatcher.For(dir, seeker); err != nil {
			b.Fatal(err)
		}
	}
	if len(confirm) == 0 {
		b.Fatal("no confirmation mail after a minute")
	}
	// The mail's link opens the page (whose GET confirms nothing); its JSON
	// twin under /v2 confirms.
	link := linkRE.FindString(confirm[0].Text)
	if status, raw := suite.Do(b, "GET", gw+"/v2"+link[len(base):], "", ""); status != 200 {
		b.Fatalf("confirm: %d %s", status, raw)
	}
	b.ResetTimer()
	var mu sync.Mutex
	published := map[int]time.Time{}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	var wg sync.WaitGroup
	for i := range rate * seconds {
		<-tick.C
		wg.Go(func() {
			status, raw := suite.Do(b, "POST", gw+"/v2/jobs", pro, fmt.Sprintf(`{"title":"Benchhost %d","company":"Factory",
				"description":"<p>Host</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`, i))
			if status != 201 {
				b.Errorf("publish %d: %d %s", i, status, raw)
				return
			}
			mu.Lock()
			published[i] = time.Now()
			mu.Unlock()
		})
	}
	tick.Stop()
	wg.Wait()
	mails := waitMatches(b, dir, seeker, len(published), 3*time.Minute)
	b.StopTimer()
	var lat []time.Duration
	for _, m := range mails {
		sm := subjectRE.FindStringSubmatch(m.Subject)
		if sm == nil {
			continue
		}
		i, _ := strconv.Atoi(sm[1])
		at, ok := published[i]
		fi, err := os.Stat(m.Path)
		if !ok || err != nil {
			continue
		}
		lat = append(lat, fi.ModTime().Sub(at))
	}
	if len(lat) != len(published) {
		b.Fatalf("%d mails for %d published jobs", len(lat), len(published))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))].Seconds() }
	b.ReportMetric(q(0.5), "p50_s")
	b.ReportMetric(q(0.95), "p95_s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "max_s")
	b.ReportMetric(float64(len(lat)), "mails")
	out, _ := json.Marshal(map[string]any{"rate": rate, "seconds": seconds, "mails": len(lat), "p50": q(0.5), "p95": q(0.95)})
	b.Log(string(out))
}

var subjectRE = regexp.MustCompile(`^New job: Benchhost (\d+) at`)

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
		return n
	}
	return def
}

// waitMatches waits for n match mails to addr (the confirmation, sent or
// skipped for an alert confirmed before its turn, is not counted).
func waitMatches(t testing.TB, dir, addr string, n int, wait time.Duration) []*mailcatcher.Mail {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got, err := mailcatcher.For(dir, addr)
		if err != nil {
			t.Fatal(err)
		}
		matches := 0
		for _, m := range got {
			if subjectRE.MatchString(m.Subject) {
				matches++
			}
		}
		if matches >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(500 * time.Millisecond)
	}
}
