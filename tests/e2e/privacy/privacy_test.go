// Package privacy runs the suite with Temporal, both workers and a mail
// catcher, and erases addresses across job alerts and the newsletter
// (docs/privacy.md): from a mail's link through the gateway, by the
// operator's command, with community away, and not at all for a forged
// token; then no log line and no span of any process names an address.
package privacy

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_privacy", &dbURL, nil)) }

// spans keeps every OTLP/HTTP export body as sent (decompressed): an
// address in any attribute, name or event shows in its bytes.
type spans struct {
	mu   sync.Mutex
	body bytes.Buffer
	n    int
}

func (s *spans) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	s.mu.Lock()
	s.body.Write(b)
	s.n++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (s *spans) has(needle string) (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(bytes.ToLower(s.body.Bytes()), []byte(strings.ToLower(needle))), s.n
}

type fixture struct {
	t    *testing.T
	sys  *suite.Suite
	db   *pgxpool.Pool
	dir  string
	gw   string
	pro  string
	ctx  context.Context
	seen []string // every address used, for the log and span check
}

func TestErasureAcrossAlertsAndNewsletter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)
	smtp, dir := mailcatcher.StartTest(t)
	collector := &spans{}
	otlp := httptest.NewServer(collector)
	t.Cleanup(otlp.Close)
	sys := suite.StartTest(t, suite.Options{
		Name: "privacy", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker", "community-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtp, "JOBS_RELAY_INTERVAL=200ms",
			"OUTBOX_POLL_INTERVAL=200ms", "PUBLIC_POST_RATE_LIMIT_PER_MINUTE=1000", "ALERT_CONFIRM_EVERY=1s",
			// everything a process could say, and every span it makes
			"LOG_LEVEL=debug", "ACCESS_LOG=true",
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=", "OTEL_TRACES_SAMPLER=always_on", "OTEL_SDK_DISABLED="},
	})
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	f := &fixture{t: t, sys: sys, db: db, dir: dir, gw: sys.URL["gateway"], pro: sys.Keys["space 1 (Pro) key"], ctx: ctx}
	run := suite.RandomHex(4)

	// A seeker with two alerts (one matched by a job) and a newsletter
	// subscription follows the erasure link of the instant match mail.
	mia := "Mia-" + run + "@Example.com" // the form's case: stored lower-cased, erased whatever the case
	miaLow := strings.ToLower(mia)
	f.alert(mia, `"city":"berlin","q":"host"`)
	f.alert(mia, `"tag":"coffee","q":"barista"`)
	f.subscribe(mia)
	f.confirmAll(miaLow, 2, true) // two alert confirmations, one newsletter confirmation
	f.job("Community Host " + run)
	match := f.waitMailWith(miaLow, "New job: Community Host "+run)
	for _, m := range f.mails(miaLow) {
		if !strings.Contains(m.Text, privacy.ErasePath) {
			t.Errorf("the mail %q has no erasure link", m.Subject)
		}
	}
	f.export(miaLow, 2, "subscribed")
	link := linkIn(t, match.Text, privacy.ErasePath)
	// The GET is a page with a button: a scanner's prefetch erases nothing.
	status, page := f.raw("GET", link, "", nil)
	if status != 200 || !strings.Contains(page, `<form method="post" action="/v2/privacy/erase">`) || !strings.Contains(page, miaLow) {
		t.Fatalf("erasure page: %d\n%s", status, page)
	}
	f.held(miaLow, 2, true)
	tok := tokenOf(t, link)
	status, page = f.raw("POST", "/v2/privacy/erase", "token="+url.QueryEscape(tok),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"})
	if status != 200 || !strings.Contains(page, "Address erased") {
		t.Fatalf("erase from the page's form: %d\n%s", status, page)
	}
	f.erased(miaLow)
	// Again: idempotent.
	if status, body := f.raw("POST", link, "", nil); status != 200 {
		t.Fatalf("a second erasure: %d %s", status, body)
	}

	// The operator's command does the same.
	noah := "noah-" + run + "@example.com"
	f.alert(noah, `"city":"berlin","q":"barista"`)
	f.subscribe(noah)
	f.confirmAll(noah, 1, true)
	f.held(noah, 1, true)
	out, err := sys.Run(ctx, "jobs-admin", "erase-address", "-email", noah)
	if err != nil || !strings.Contains(string(out), "jobs: 1 alerts erased") || !strings.Contains(string(out), "community: erased") {
		t.Fatalf("erase-address: %v\n%s", err, out)
	}
	f.erased(noah)
	f.export(noah, 0, "")

	// Community away while erasing: the jobs side answers and erases at
	// once, the newsletter's subscriber goes once community is back. The
	// newsletter's own mail carries the link this time.
	ada := "ada-" + run + "@example.com"
	f.alert(ada, `"city":"berlin","q":"manager"`)
	f.subscribe(ada)
	news := f.waitMailWith(ada, "newsletter")
	adaLink := linkIn(t, news.Text, privacy.ErasePath)
	if err := sys.Kill("community"); err != nil {
		t.Fatal(err)
	}
	if status, body := f.raw("POST", "/v2/privacy/erase", fmt.Sprintf(`{"token":%q}`, tokenOf(t, adaLink)),
		map[string]string{"Content-Type": "application/json"}); status != 200 || !strings.Contains(body, `"erased"`) {
		t.Fatalf("erase with community away: %d %s", status, body)
	}
	f.held(ada, 0, true)
	time.Sleep(time.Second) // several relay rounds fail meanwhile
	if n := f.count(`SELECT count(*) FROM jobs.privacy_outbox WHERE attempts > 0`); n < 1 {
		t.Fatalf("%d queued erasures retried, want the one waiting for community", n)
	}
	if err := sys.Start(ctx, "community"); err != nil {
		t.Fatal(err)
	}
	f.erased(ada)

	// Forged and altered tokens: 4xx, nothing erased.
	eve := "eve-" + run + "@example.com"
	f.alert(eve, `"city":"berlin","q":"cook"`)
	f.subscribe(eve)
	news = f.waitMailWith(eve, "newsletter")
	good := tokenOf(t, linkIn(t, news.Text, privacy.ErasePath))
	other, _ := privacy.NewSealer([]byte(strings.Repeat("x", 32)))
	flip := []byte(good)
	flip[len(flip)/2] ^= 1
	for name, tok := range map[string]string{
		"altered": string(flip), "another key's": other.Token(eve), "cut": good[:len(good)-4],
		"random": suite.RandomHex(40), "not base64": "!!!" + good,
	} {
		for _, m := range []string{"GET", "POST"} {
			if status, body := f.raw(m, "/v2/privacy/erase?token="+url.QueryEscape(tok), "", nil); status != 404 {
				t.Errorf("%s token, %s: %d %s, want 404", name, m, status, body)
			}
		}
	}
	for _, q := range []string{"", "?token=" + strings.Repeat("a", 600)} {
		if status, body := f.raw("POST", "/v2/privacy/erase"+q, "", nil); status != 422 {
			t.Errorf("POST %q: %d %s, want 422", q, status, body)
		}
	}
	f.held(eve, 1, true)

	// No log line of any process and no span names an address.
	time.Sleep(500 * time.Millisecond) // the last spans' batch
	if gw := sys.Log("gateway"); !strings.Contains(gw, "/v2/privacy/erase") {
		t.Fatalf("the gateway's access log has no erasure request: the logs checked are not the processes' own\n%.2000s", gw)
	}
	for _, name := range []string{"gateway", "jobs", "community", "directory", "content", "jobs-worker", "community-worker"} {
		log := strings.ToLower(sys.Log(name))
		for _, a := range f.seen {
			for _, form := range []string{strings.ToLower(a), strings.ToLower(url.QueryEscape(a))} {
				if strings.Contains(log, form) {
					t.Errorf("the %s log names %s", name, form)
				}
			}
		}
	}
	for _, a := range f.seen {
		if found, n := collector.has(a); found || n == 0 {
			t.Errorf("spans (%d exports) name %s: %v", n, a, found)
		}
	}
}

func (f *fixture) note(a string) {
	for _, s := range f.seen {
		if s == a {
			return
		}
	}
	f.seen = append(f.seen, a)
}

func (f *fixture) alert(email, search string) {
	f.t.Helper()
	f.note(email)
	if status, body := f.raw("POST", "/v2/alerts", fmt.Sprintf(`{"email":%q,%s}`, email, search),
		map[string]string{"Content-Type": "application/json"}); status != 202 {
		f.t.Fatalf("alert: %d %s", status, body)
	}
}

func (f *fixture) subscribe(email string) {
	f.t.Helper()
	f.note(email)
	if status, body := f.raw("POST", "/v2/newsletters/subscribe", fmt.Sprintf(`{"email":%q,"consent":true}`, email),
		map[string]string{"Content-Type": "application/json"}); status != 202 {
		f.t.Fatalf("subscribe: %d %s", status, body)
	}
}

func (f *fixture) job(title string) {
	f.t.Helper()
	status, body := suite.Do(f.t, "POST", f.gw+"/v2/jobs", f.pro, fmt.Sprintf(`{"title":%q,"company":"Factory",
		"description":"<p>Host</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`, title))
	if status != 201 {
		f.t.Fatalf("create job: %d %s", status, body)
	}
}

// confirmAll follows every confirmation link the mails to email carry
// until it has confirmed alerts alerts and, with newsletter, the
// subscription. An address's alert confirmations come one mail at a time,
// each listing every search still pending (ALERT_CONFIRM_EVERY apart), so
// links are counted, not mails.
func (f *fixture) confirmAll(email string, alerts int, newsletter bool) {
	f.t.Helper()
	done := map[string]bool{}
	count := func(path string) (n int) {
		for l := range done {
			if strings.HasPrefix(l, "/v2"+path) || strings.HasPrefix(l, path) {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		for _, m := range f.mails(email) {
			// the alert's link is its HTML page; the JSON route under /v2 takes the same token
			for _, path := range []string{"/alerts/confirm", "/v2/newsletters/confirm"} {
				for _, l := range findLinks(m.Text, path) {
					if !strings.HasPrefix(l, "/v2/") {
						l = "/v2" + l
					}
					if done[l] {
						continue
					}
					if status, body := f.raw("GET", l, "", nil); status != 200 {
						f.t.Fatalf("confirm %s: %d %s", path, status, body)
					}
					done[l] = true
				}
			}
		}
		wantNews := 0
		if newsletter {
			wantNews = 1
		}
		if count("/v2/alerts/confirm") >= alerts && count("/v2/newsletters/confirm") >= wantNews {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("after a minute %d alert and %d newsletter confirmations for %s, want %d and %d",
				count("/v2/alerts/confirm"), count("/v2/newsletters/confirm"), email, alerts, wantNews)
		}
	}
}

func (f *fixture) raw(method, path, body string, hdr map[string]string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, f.gw+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// held checks what the jobs service holds (alerts) and whether community
// holds a subscriber.
func (f *fixture) held(email string, alerts int, subscriber bool) {
	f.t.Helper()
	if n := f.count(`SELECT count(*) FROM jobs.alerts a JOIN jobs.alert_addresses aa ON aa.id = a.address_id WHERE aa.email = $1`, email); n != alerts {
		f.t.Fatalf("%s: %d alerts, want %d", email, n, alerts)
	}
	if n := f.count(`SELECT count(*) FROM community.subscribers WHERE email = $1`, email); (n == 1) != subscriber {
		f.t.Fatalf("%s: %d subscribers, want %v", email, n, subscriber)
	}
}

// erased waits (up to 30 s, the relay's retries) until neither service
// holds anything about email.
func (f *fixture) erased(email string) {
	f.t.Helper()
	queries := map[string]string{
		"jobs address":       `SELECT count(*) FROM jobs.alert_addresses WHERE email = $1`,
		"community":          `SELECT count(*) FROM community.subscribers WHERE email = $1`,
		"newsletter outbox":  `SELECT count(*) FROM community.newsletter_outbox WHERE email = $1`,
		"erasures queued":    `SELECT count(*) FROM jobs.privacy_outbox WHERE $1 <> ''`,
		"orphan alerts":      `SELECT count(*) FROM jobs.alerts a WHERE NOT EXISTS (SELECT 1 FROM jobs.alert_addresses aa WHERE aa.id = a.address_id) AND $1 <> ''`,
		"matches of nothing": `SELECT count(*) FROM jobs.alert_matches m WHERE NOT EXISTS (SELECT 1 FROM jobs.alerts a WHERE a.id = m.alert_id) AND $1 <> ''`,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := ""
		for what, q := range queries {
			if n := f.count(q, email); n != 0 {
				left += fmt.Sprintf(" %s=%d", what, n)
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%s still held after 30 s:%s", email, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// export checks the operator's export of both services.
func (f *fixture) export(email string, alerts int, newsletter string) {
	f.t.Helper()
	out, err := f.sys.Run(f.ctx, "jobs-admin", "export-address", "-email", email)
	if err != nil {
		f.t.Fatalf("export-address: %v\n%s", err, out)
	}
	var exp struct {
		Address string `json:"address"`
		Jobs    struct {
			AddressStored bool `json:"address_stored"`
			Alerts        []struct {
				Search      string     `json:"search"`
				Frequency   string     `json:"frequency"`
				ConfirmedAt *time.Time `json:"confirmed_at"`
				Matches     int        `json:"matches"`
			} `json:"alerts"`
		} `json:"jobs"`
		Community struct {
			Newsletter *struct {
				Status      string     `json:"status"`
				ConsentAt   time.Time  `json:"consent_at"`
				ConfirmedAt *time.Time `json:"confirmed_at"`
			} `json:"newsletter"`
		} `json:"community"`
	}
	if err := json.Unmarshal(out, &exp); err != nil {
		f.t.Fatalf("export-address is not JSON: %v\n%s", err, out)
	}
	if exp.Address != email || len(exp.Jobs.Alerts) != alerts || exp.Jobs.AddressStored != (alerts > 0) {
		f.t.Fatalf("export of %s: %s", email, out)
	}
	matches := 0
	for _, a := range exp.Jobs.Alerts {
		if a.Search == "" || a.Frequency != "instant" || a.ConfirmedAt == nil {
			f.t.Fatalf("export of %s: an alert without its search, frequency or confirmation: %s", email, out)
		}
		matches += a.Matches
	}
	if alerts > 0 && matches == 0 {
		f.t.Fatalf("export of %s counts no match: %s", email, out)
	}
	switch {
	case newsletter == "" && exp.Community.Newsletter != nil,
		newsletter != "" && (exp.Community.Newsletter == nil || exp.Community.Newsletter.Status != newsletter ||
			exp.Community.Newsletter.ConfirmedAt == nil || exp.Community.Newsletter.ConsentAt.IsZero()):
		f.t.Fatalf("export of %s: newsletter, want %q: %s", email, newsletter, out)
	}
}

func (f *fixture) mails(email string) []*mailcatcher.Mail {
	f.t.Helper()
	got, err := mailcatcher.For(f.dir, email)
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

func (f *fixture) waitMailWith(email, subject string) *mailcatcher.Mail {
	f.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		for _, m := range f.mails(email) {
			if strings.Contains(m.Subject, subject) {
				return m
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("no mail %q to %s after a minute", subject, email)
		}
	}
}

var linkRE = regexp.MustCompile(`https?://\S+`)

func findLinks(text, path string) []string {
	var out []string
	for _, l := range linkRE.FindAllString(text, -1) {
		if u, err := url.Parse(l); err == nil && u.Path == path {
			out = append(out, u.RequestURI())
		}
	}
	return out
}

func findLink(text, path string) string {
	for _, l := range linkRE.FindAllString(text, -1) {
		if u, err := url.Parse(l); err == nil && u.Path == path {
			return u.RequestURI()
		}
	}
	return ""
}

func linkIn(t *testing.T, text, path string) string {
	t.Helper()
	l := findLink(text, path)
	if l == "" {
		t.Fatalf("no link to %s in:\n%s", path, text)
	}
	return l
}

func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("no token in %s", link)
	}
	return u.Query().Get("token")
}
