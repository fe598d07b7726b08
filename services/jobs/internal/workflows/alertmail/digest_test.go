package alertmail

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

// savedDigest stores and confirms an alert of frequency in zone tz.
func savedDigest(t *testing.T, r *Relay, email, search, frequency, tz string) alertbus.Alert {
	t.Helper()
	f, ok := Parse(search)
	if !ok {
		t.Fatalf("search %q does not parse", search)
	}
	a, _, err := db(r).Save(context.Background(), alertbus.Alert{Email: email, Search: search, Frequency: frequency,
		TimeZone: tz, Nonce: alertbus.NewNonce()}, alertbus.PercolationKey(f), alertbus.ConfirmLimits{PerDay: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := db(r).Confirm(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	return a
}

// runClock runs DigestClockWorkflow, with its real activity against the real
// database, in the time-skipping test environment from start for ticks
// quarter hours.
func runClock(t *testing.T, r *Relay, start time.Time, ticks int) {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(tlog.NewStructuredLogger(quiet))
	env := ts.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	Register(env, &Activities{Mails: r})
	env.ExecuteWorkflow(DigestClockWorkflow, ClockInput{Ticks: ticks})
	if err := env.GetWorkflowError(); !workflow.IsContinueAsNewError(err) {
		t.Fatalf("the clock ended with %v, want to continue as new", err)
	}
}

// queued are the digests waiting in the outbox for alert, by their time.
func queued(t *testing.T, alert int64) []time.Time {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT digest_at FROM alert_outbox WHERE kind = 'digest' AND alert_id = $1 ORDER BY digest_at`, alert)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		out = append(out, at)
	}
	return out
}

// at8 is 08:00 in loc on the day of t there, plus days.
func at8(t time.Time, loc *time.Location, days int) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day()+days, 8, 0, 0, 0, loc)
}

// TestDigests drives the digest clock through two days: a daily alert in
// Europe/Lisbon is taken at its local 08:00 (not a tick before), one in
// Asia/Tokyo at its own, a weekly one on Monday; a job paused, closed or
// expired before the digest is left out (and a paused one resumed is in
// the next); a repeated run mails nothing again.
func TestDigests(t *testing.T) {
	t.Parallel()
	r, dir := fixture(t)
	ctx := context.Background()
	run := fmt.Sprintf("%08x", rand.Uint32())
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	if err != nil {
		t.Fatal(err)
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	// The clock starts on the coming Sunday at 05:00 UTC (the jobs' 30 days
	// still run then).
	start := time.Date(time.Now().Year(), time.Now().Month(), time.Now().Day(), 5, 0, 0, 0, time.UTC)
	for start.Weekday() != time.Sunday || !start.After(time.Now()) {
		start = start.AddDate(0, 0, 1)
	}
	city := "digest-" + run
	search := "city=" + city + "&q=barista"
	daily := savedDigest(t, r, "daily-"+run+"@seeker.example", search, alertbus.Daily, "Europe/Lisbon")
	weekly := savedDigest(t, r, "weekly-"+run+"@seeker.example", search, alertbus.Weekly, "Europe/Lisbon")
	far := savedDigest(t, r, "tokyo-"+run+"@seeker.example", search, alertbus.Daily, "Asia/Tokyo")
	visible := newJob(t, "Barista Visible "+run, city, "coffee", false)
	paused := newJob(t, "Barista Paused "+run, city, "coffee", false)
	closed := newJob(t, "Barista Closed "+run, city, "coffee", false)
	expired := newJob(t, "Barista Expiring "+run, city, "coffee", false)
	drain(t, r)
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: base})
	for id, ev := range map[int64]jobbus.Event{paused: jobbus.EventPause, closed: jobbus.EventUnpublish} {
		if _, err := bus.Transition(ctx, jobbus.Caller{KeyID: 1}, id, ev); err != nil {
			t.Fatal(ev, err)
		}
	}
	// It expires an hour into the clock's run, before any 08:00 digest.
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = $2 WHERE id = $1`, expired, start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var pairs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM alert_matches WHERE alert_id = ANY($1) AND sent_at IS NULL`,
		[]int64{daily.ID, weekly.ID, far.ID}).Scan(&pairs); err != nil || pairs != 12 {
		t.Fatalf("%d unsent pairs (%v), want 3 alerts × 4 jobs", pairs, err)
	}

	// Day one: Sunday 05:00 UTC to Monday 09:00 UTC.
	runClock(t, r, start, 4*28)
	sunday8 := at8(start, lisbon, 0)
	for _, c := range []struct {
		name  string
		alert alertbus.Alert
		want  time.Time
	}{
		{"Lisbon daily at its 08:00", daily, sunday8},
		{"Lisbon weekly on Monday", weekly, at8(start, lisbon, 1)},
		{"Tokyo daily at its 08:00", far, at8(start, tokyo, 1)},
	} {
		if got := queued(t, c.alert.ID); len(got) != 1 || !got[0].Equal(c.want) {
			t.Errorf("%s: digests queued at %v, want one at %v", c.name, got, c.want.UTC())
		}
	}
	if next, err := db(r).NextDigest(ctx, daily.ID); err != nil || next == nil || !next.Equal(at8(start, lisbon, 2)) {
		t.Errorf("the daily alert's next digest %v (%v), want Tuesday's 08:00 (Monday's had nothing new)", next, err)
	}
	drain(t, r)
	for _, a := range []alertbus.Alert{daily, weekly, far} {
		got := mails(t, dir, a.Email)
		if len(got) != 1 {
			t.Fatalf("%s: %d mails after day one, want one digest", a.Email, len(got))
		}
		m := got[0]
		if !strings.Contains(m.Text, "Barista Visible "+run) || !hasHTML(t, m.Path) ||
			!strings.Contains(m.Text, fmt.Sprintf("-%d", visible)) || !strings.Contains(m.Text, "Alert Coworking") {
			t.Errorf("%s: the digest lacks the visible job:\n%s", a.Email, m.Text)
		}
		for _, left := range []string{"Paused", "Closed", "Expiring"} {
			if strings.Contains(m.Text, "Barista "+left) {
				t.Errorf("%s: the digest lists the %s job:\n%s", a.Email, strings.ToLower(left), m.Text)
			}
		}
		if !strings.Contains(m.Text, "/alerts/manage?token=") || m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" ||
			!strings.Contains(m.Header.Get("List-Unsubscribe"), "/alerts/unsubscribe?token=") {
			t.Errorf("%s: the digest lacks its management or one-click links: %v\n%s", a.Email, m.Header, m.Text)
		}
	}

	// Day two: the paused job is resumed; the daily alerts hear of it, and
	// only of it; the weekly one waits for next Monday.
	if _, err := bus.Transition(ctx, jobbus.Caller{KeyID: 1}, paused, jobbus.EventResume); err != nil {
		t.Fatal(err)
	}
	drain(t, r)
	day2 := start.Add(28 * time.Hour)
	for repeat := range 2 { // the second run repeats the first: nothing is mailed again
		runClock(t, r, day2, 4*24)
		drain(t, r)
		for a, want := range map[alertbus.Alert]int{daily: 2, far: 2, weekly: 1} {
			got := mails(t, dir, a.Email)
			if len(got) != want {
				t.Fatalf("run %d: %s got %d mails, want %d", repeat+1, a.Email, len(got), want)
			}
			if want == 2 {
				m := got[1]
				if !strings.Contains(m.Text, "Barista Paused "+run) || strings.Contains(m.Text, "Barista Visible") {
					t.Errorf("%s: the second digest should list only the resumed job:\n%s", a.Email, m.Text)
				}
			}
		}
	}
}

// hasHTML reports a caught mail with an HTML alternative.
func hasHTML(t *testing.T, path string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(raw), "Content-Type: text/html")
}
