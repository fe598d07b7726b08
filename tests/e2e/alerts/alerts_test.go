// Package alerts runs the suite with Temporal, the jobs worker and a mail
// catcher, and follows a job alert through the gateway: validation, double
// opt-in, the instant mail of a new matching job with RFC 8058 headers,
// management and one-click unsubscribe.
package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_alerts", &dbURL, nil)) }

const base = "http://coworkjobs.test" // the suite's PUBLIC_BASE_URL

func TestAlertThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)
	smtpAddr, dir := mailcatcher.StartTest(t)
	sys := suite.StartTest(t, suite.Options{
		Name: "alerts", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtpAddr, "JOBS_RELAY_INTERVAL=200ms",
			"ALERT_DIGEST_PERIOD=1s", "PUBLIC_POST_RATE_LIMIT_PER_MINUTE=30"},
	})
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	gw := sys.URL["gateway"]

	// Bad input: a 422 naming the parameter, never a 500.
	for body, want := range map[string]string{
		`{"email":"mia@example.com","city":"Not A Slug!"}`:                   "city must be a city slug",
		`{"email":"mia@example.com","q":"host","salary_min":100}`:            "salary_min needs currency",
		`{"email":"mia@example.com","q":"host","frequency":"hourly"}`:        "frequency must be one of",
		`{"email":"not an address","q":"host"}`:                              "email must be a valid address",
		`{"email":"mia@example.com"}`:                                        "too broad",
		`{"email":"mia@example.com","q":"host","near":"91,0","radius_km":5}`: "near",
		`{"email":"mia@example.com","q":"host","colour":"red"}`:              "colour",
		`{"email":"mia@example.com","q":"host","time_zone":"Mars/Olympus"}`:  "time_zone",
		`{"email":"mia@example.com","q":"host","time_zone":"Local"}`:         "time_zone",
		`{"email":"mia@example.com","q":"host\nclick here"}`:                 "q must not contain control characters",
		`{"email":"mia@example.com","q":"host","tag":"a\u0007"}`:             "tag must not contain control characters",
	} {
		status, msg := call(t, "POST", gw+"/v2/alerts", "", body, nil)
		if status != 422 || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %q, want 422 naming %q", body, status, msg, want)
		}
	}

	seeker := "seeker-" + suite.RandomHex(4) + "@example.com"
	body := fmt.Sprintf(`{"email":%q,"city":"berlin","q":"host","frequency":"instant"}`, seeker)
	for range 2 { // asking twice: one alert, one mail now (the next one no sooner than ALERT_CONFIRM_EVERY)
		if status, msg := call(t, "POST", gw+"/v2/alerts", "", body, nil); status != 202 {
			t.Fatalf("create: %d %s", status, msg)
		}
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM jobs.alerts a JOIN jobs.alert_addresses aa ON aa.id = a.address_id WHERE aa.email = $1`, seeker).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d alerts for the address (%v), want 1", n, err)
	}
	confirm := waitMail(t, dir, seeker, 1)
	// The mail links to the page; its JSON twin is under /v2.
	link := "/v2" + linkIn(t, confirm[0].Text, "/alerts/confirm")
	noFlood(t, db, gw, dir)

	// Unconfirmed: a matching job sends nothing.
	pro := sys.Keys["space 1 (Pro) key"]
	if status, msg := call(t, "POST", gw+"/v2/jobs", pro, `{"title":"Early Community Host","company":"Factory","description":"<p>Host</p>",
		"job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`, nil); status != 201 {
		t.Fatalf("create job: %d %s", status, msg)
	}
	// The worker's matching has read past that job before the click.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM jobs.job_events e, jobs.event_readers d WHERE d.reader = 'alerts' AND (e.xid, e.seq) > (d.xid, d.seq)`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d job events still unread by the alerts' matching after a minute", left)
		}
	}
	var alert struct {
		Confirmed bool              `json:"confirmed"`
		Paused    bool              `json:"paused"`
		Search    map[string]string `json:"search"`
		TimeZone  string            `json:"time_zone"`
	}
	if status, msg := call(t, "GET", gw+link, "", "", &alert); status != 200 || !alert.Confirmed || alert.Search["city"] != "berlin" ||
		alert.TimeZone != "Europe/Berlin" {
		t.Fatalf("confirm: %d %s %+v", status, msg, alert)
	}
	if status, _ := call(t, "GET", gw+"/v2/alerts/confirm?token=1.forged", "", "", nil); status != 404 {
		t.Fatalf("a forged token: %d, want 404", status)
	}

	var job struct {
		JobID int64 `json:"job_id"`
	}
	if status, msg := call(t, "POST", gw+"/v2/jobs", pro, `{"title":"Community Host","company":"Factory","description":"<p>Host</p>",
		"job_type":"fulltime","tags":"hosting","city_name":"Berlin","currency":"EUR","sal_min":30000,"sal_max":40000}`, &job); status != 201 {
		t.Fatalf("create job: %d %s", status, msg)
	}
	mails := waitMail(t, dir, seeker, 2)
	match := mails[1]
	if !strings.Contains(match.Subject, "Community Host") || strings.Contains(match.Subject, "Early") ||
		!strings.Contains(match.Text, fmt.Sprintf("-%d", job.JobID)) || !strings.Contains(match.Text, "30000") {
		t.Fatalf("match mail %q:\n%s", match.Subject, match.Text)
	}
	if match.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("no one-click header: %v", match.Header)
	}
	unsub := strings.Trim(match.Header.Get("List-Unsubscribe"), "<>")
	manage := "/v2" + linkIn(t, match.Text, "/alerts/manage")

	// Manage: pause through the link; a job published meanwhile is not mailed.
	if status, msg := call(t, "POST", gw+manage, "", `{"paused":true}`, &alert); status != 200 || !alert.Paused {
		t.Fatalf("pause: %d %s %+v", status, msg, alert)
	}
	if status, msg := call(t, "POST", gw+manage, "", `{"frequency":"sometimes"}`, nil); status != 422 || !strings.Contains(msg, "frequency") {
		t.Fatalf("bad frequency: %d %s", status, msg)
	}

	// One-click unsubscribe (RFC 8058): a form POST to the header's URL.
	u, err := url.Parse(unsub)
	if err != nil || !strings.HasPrefix(unsub, base) {
		t.Fatalf("List-Unsubscribe %q", unsub)
	}
	req, _ := http.NewRequest("POST", gw+u.RequestURI(), strings.NewReader("List-Unsubscribe=One-Click"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("one-click unsubscribe: %d", resp.StatusCode)
	}
	if status, _ := call(t, "GET", gw+manage, "", "", nil); status != 404 {
		t.Fatalf("the deleted alert's page: %d, want 404", status)
	}
	// its last alert gone, the address goes with it
	if err := db.QueryRow(ctx, `SELECT count(*) FROM jobs.alert_addresses WHERE email = $1`, seeker).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the address is still stored (%d, %v)", n, err)
	}

	digest(t, db, gw, dir, pro)
}

// noFlood is issue 44's reproduction: ten searches for a stranger's address
// in a second make one mail, which quotes none of the free text (no link),
// then nothing until ALERT_CONFIRM_EVERY (10 minutes) has passed; the next
// one lists every pending search; past ALERT_CONFIRMS_PER_DAY nothing goes.
func noFlood(t *testing.T, db *pgxpool.Pool, gw, dir string) {
	ctx := context.Background()
	victim := "victim-" + suite.RandomHex(4) + "@example.com"
	for i := range 10 {
		body := fmt.Sprintf(`{"email":%q,"q":"host%d visit https://evil.example/login now"}`, victim, i)
		if status, msg := call(t, "POST", gw+"/v2/alerts", "", body, nil); status != 202 {
			t.Fatalf("create %d: %d %s", i, status, msg)
		}
	}
	first := waitMail(t, dir, victim, 1)[0]
	raw, err := os.ReadFile(first.Path) // both parts, as sent
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{first.Text, string(raw)} {
		if strings.Contains(m, "evil.example") || strings.Contains(m, "https://evil") {
			t.Fatalf("the confirmation echoes the free text:\n%s", m)
		}
	}
	if !strings.Contains(first.Text, "/alerts/confirm?token=") || !strings.Contains(first.Text, "host0") {
		t.Fatalf("the confirmation has no link, or not the search's words:\n%s", first.Text)
	}
	// The ten came before the relay's next round (every 200 ms here), so
	// they share that mail. A search asked for after it was sent waits in the
	// outbox until ALERT_CONFIRM_EVERY after it: nothing more for now.
	if status, msg := call(t, "POST", gw+"/v2/alerts", "", fmt.Sprintf(`{"email":%q,"q":"host10"}`, victim), nil); status != 202 {
		t.Fatalf("create after the mail: %d %s", status, msg)
	}
	time.Sleep(3 * time.Second)
	if got, _ := mailcatcher.For(dir, victim); len(got) != 1 {
		t.Fatalf("%d confirmation mails within seconds, want 1", len(got))
	}
	var waiting int
	var wait time.Duration
	if err := db.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM max(o.next_try_at) - now()), 0)::bigint * 1000000000
		FROM jobs.alert_outbox o JOIN jobs.alerts a ON a.id = o.alert_id JOIN jobs.alert_addresses aa ON aa.id = a.address_id
		WHERE aa.email = $1 AND o.kind = 'confirm'`, victim).Scan(&waiting, &wait); err != nil {
		t.Fatal(err)
	}
	if waiting != 1 || wait < 9*time.Minute {
		t.Fatalf("%d confirmations waiting, the next in %s; want 1 in about 10 minutes", waiting, wait)
	}
	// Ten minutes later (moved, not waited): one mail listing all eleven.
	if _, err := db.Exec(ctx, `UPDATE jobs.alert_outbox SET next_try_at = now() WHERE kind = 'confirm' AND alert_id IN
		(SELECT a.id FROM jobs.alerts a JOIN jobs.alert_addresses aa ON aa.id = a.address_id WHERE aa.email = $1)`, victim); err != nil {
		t.Fatal(err)
	}
	second := waitMail(t, dir, victim, 2)[1]
	if n := strings.Count(second.Text, "/alerts/confirm?token="); n != 11 {
		t.Fatalf("the second confirmation lists %d searches, want 11:\n%s", n, second.Text)
	}
	// The day's budget spent: a new search queues no mail at all.
	if _, err := db.Exec(ctx, `UPDATE jobs.alert_addresses SET confirm_count = 5, confirm_due_at = now() - interval '1 hour'
		WHERE email = $1`, victim); err != nil {
		t.Fatal(err)
	}
	if status, msg := call(t, "POST", gw+"/v2/alerts", "", fmt.Sprintf(`{"email":%q,"q":"barista"}`, victim), nil); status != 202 {
		t.Fatalf("create past the cap: %d %s", status, msg)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM jobs.alert_outbox o JOIN jobs.alerts a ON a.id = o.alert_id
		JOIN jobs.alert_addresses aa ON aa.id = a.address_id WHERE aa.email = $1`, victim).Scan(&waiting); err != nil || waiting != 0 {
		t.Fatalf("past the day's cap %d mails queued (%v), want 0", waiting, err)
	}
}

// digest follows a daily alert: its zone is its city's (or the one given),
// the digest clock (ticking every second here) schedules it at 08:00 in
// Lisbon, and when that morning comes (the test moves next_digest_at to
// now: it cannot wait for 08:00) the digest arrives through the outbox,
// Temporal and SMTP, listing the new job with the alert's links.
func digest(t *testing.T, db *pgxpool.Pool, gw, dir, pro string) {
	ctx := context.Background()
	other := "zone-" + suite.RandomHex(4) + "@example.com"
	if status, msg := call(t, "POST", gw+"/v2/alerts", "", fmt.Sprintf(`{"email":%q,"city":"lisbon","q":"host","time_zone":"America/New_York"}`, other), nil); status != 202 {
		t.Fatalf("create with a zone: %d %s", status, msg)
	}
	var tz string
	if err := db.QueryRow(ctx, `SELECT time_zone FROM jobs.alerts WHERE address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1)`, other).Scan(&tz); err != nil || tz != "America/New_York" {
		t.Fatalf("the given zone: %q %v", tz, err)
	}

	seeker := "digest-" + suite.RandomHex(4) + "@example.com"
	if status, msg := call(t, "POST", gw+"/v2/alerts", "", fmt.Sprintf(`{"email":%q,"city":"lisbon","q":"barista","frequency":"daily"}`, seeker), nil); status != 202 {
		t.Fatalf("create daily: %d %s", status, msg)
	}
	link := "/v2" + linkIn(t, waitMail(t, dir, seeker, 1)[0].Text, "/alerts/confirm")
	var alert struct {
		TimeZone  string `json:"time_zone"`
		Frequency string `json:"frequency"`
	}
	if status, msg := call(t, "GET", gw+link, "", "", &alert); status != 200 || alert.TimeZone != "Europe/Lisbon" || alert.Frequency != "daily" {
		t.Fatalf("confirm daily: %d %s %+v", status, msg, alert)
	}
	var job struct {
		JobID int64 `json:"job_id"`
	}
	if status, msg := call(t, "POST", gw+"/v2/jobs", pro, `{"title":"Lisbon Barista","company":"Factory","description":"<p>Coffee</p>",
		"job_type":"fulltime","tags":"coffee","city_name":"Lisbon","currency":"EUR","sal_min":20000}`, &job); status != 201 {
		t.Fatalf("create job: %d %s", status, msg)
	}
	var local string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var pairs int
		err := db.QueryRow(ctx, `SELECT count(*), coalesce(to_char(max(a.next_digest_at) AT TIME ZONE 'Europe/Lisbon', 'HH24:MI'), '')
			FROM jobs.alerts a JOIN jobs.alert_matches m ON m.alert_id = a.id AND m.sent_at IS NULL WHERE a.address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1) AND m.job_id = $2`,
			seeker, job.JobID).Scan(&pairs, &local)
		if err != nil {
			t.Fatal(err)
		}
		if pairs == 1 && local != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d unsent pairs, next digest at %q Lisbon time", pairs, local)
		}
	}
	if local != "08:00" {
		t.Fatalf("the digest is due at %s Lisbon time, want 08:00", local)
	}
	if _, err := db.Exec(ctx, `UPDATE jobs.alerts SET next_digest_at = now() WHERE address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1)`, seeker); err != nil {
		t.Fatal(err)
	}
	m := waitMail(t, dir, seeker, 2)[1]
	if !strings.Contains(m.Subject, "1 new job today") || !strings.Contains(m.Text, "Lisbon Barista") ||
		!strings.Contains(m.Text, fmt.Sprintf("-%d", job.JobID)) || !strings.Contains(m.Text, "from 20000 EUR") ||
		!strings.Contains(m.Text, "/alerts/manage?token=") || m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("digest %q %v:\n%s", m.Subject, m.Header, m.Text)
	}
}

var linkRE = regexp.MustCompile(`https?://\S+`)

// linkIn is the path and query of the mail's link to path.
func linkIn(t *testing.T, text, path string) string {
	t.Helper()
	for _, l := range linkRE.FindAllString(text, -1) {
		if u, err := url.Parse(l); err == nil && u.Path == path {
			return u.RequestURI()
		}
	}
	t.Fatalf("no link to %s in:\n%s", path, text)
	return ""
}

func waitMail(t *testing.T, dir, addr string, n int) []*mailcatcher.Mail {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := mailcatcher.For(dir, addr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mails to %s after a minute, want %d", len(got), addr, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitMatch waits for addr's first match mail ("New job: …"); the
// confirmations before it are any number (asking again resends one).
func waitMatch(t *testing.T, dir, addr string) *mailcatcher.Mail {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := mailcatcher.For(dir, addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got {
			if strings.HasPrefix(m.Subject, "New job") {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no match mail to %s after a minute (%d mails)", addr, len(got))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// call sends a request and returns the status and the error's text.
func call(t *testing.T, method, url, key, body string, data any) (int, string) {
	t.Helper()
	status, raw := suite.Do(t, method, url, key, body)
	var env suite.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, status, raw)
	}
	if env.Success && data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			t.Fatal(err)
		}
	}
	return status, string(raw)
}
