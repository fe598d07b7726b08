package alertmail

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobsearch"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus/stores/statsdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_alerts", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 5}}, pgtest.SetPool(&pool)))
}

var quiet = slog.New(slog.DiscardHandler)

const base = "https://coworkjobs.example"

// fixture is a relay mailing through a mail catcher, and the catcher's dir.
func fixture(t testing.TB) (*Relay, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := mailcatcher.New(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	sender, err := mailer.New("smtp://"+ln.Addr().String(), "coworkjobs <jobs@coworkjobs.example>")
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := privacy.NewSealer([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Store: alertdb.New(pool), Readers: eventdb.New(pool), Signer: alertbus.NewSigner([]byte(strings.Repeat("s", 32))), Privacy: sealer,
		Jobs: jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: base}), Mail: sender, Log: quiet}
	r.Starter = envStarter{acts: &Activities{Mails: r, Stats: statsdb.New(pool)}}
	return r, dir
}

// db is r's store as the tests use it: all of alertdb, past the relay's
// alertbus.MailStorer.
func db(r *Relay) *alertdb.Store { return r.Store.(*alertdb.Store) }

// envStarter runs each mail's workflow, with its real activity, in
// Temporal's test environment as the relay hands it over.
type envStarter struct{ acts *Activities }

func (s envStarter) StartMail(_ context.Context, in MailInput) error {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(tlog.NewStructuredLogger(quiet))
	env := ts.NewTestWorkflowEnvironment()
	RegisterWorkflows(env)
	env.RegisterActivity(s.acts)
	env.ExecuteWorkflow(AlertMailWorkflow, in)
	return env.GetWorkflowError()
}

// newJob creates an active job (created active: it becomes visible).
func newJob(t testing.TB, title, city, tags string, remote bool) int64 {
	t.Helper()
	from, to, refresh := jobbus.UpdateMoves(false)
	w, err := jobdb.New(pool).Upsert(context.Background(), jobbus.NewJob{Title: title, Company: "Alert Coworking",
		Description: "<p>Host</p>", JobType: "fulltime", Tags: tags, Slug: "alert", IsRemote: remote,
		City: jobbus.City{ID: 1, Name: city, Slug: city}, KeyID: 1, Currency: "EUR", InvEmail: "a@b.example",
		Plan: jobbus.Plan{ID: 5, Name: "Free", ExpirationDays: 30}, Status: jobbus.StatusActive,
		UpdateFrom: from, UpdateTo: to, Refresh: refresh, Fingerprint: jobbus.Fingerprint(title, city, 1, tags),
		HashIdentifier: jobbus.Fingerprint(title, city+tags, 0, "")[:32]})
	if err != nil {
		t.Fatal(err)
	}
	return w.JobID
}

// saved stores and confirms an alert of search.
func saved(t *testing.T, r *Relay, email, search string, confirm bool) alertbus.Alert {
	t.Helper()
	f, ok := Parse(search)
	if !ok {
		t.Fatalf("search %q does not parse", search)
	}
	a, _, err := db(r).Save(context.Background(), alertbus.Alert{Email: email, Search: search, Frequency: alertbus.Instant,
		TimeZone: "UTC", Nonce: alertbus.NewNonce()}, alertbus.PercolationKey(f), alertbus.ConfirmLimits{PerDay: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if confirm {
		if err := db(r).Confirm(context.Background(), a.ID); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// drain matches until every event is read (the commit horizon is the
// cluster's: another database's open transaction holds it back a moment)
// and relays the mails.
func drain(t testing.TB, r *Relay) {
	t.Helper()
	ctx := context.Background()
	for {
		if _, err := r.MatchOnce(ctx); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_events e, event_readers d WHERE d.reader = 'alerts' AND (e.xid, e.seq) > (d.xid, d.seq)`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		res, err := r.RelayOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Delivered+res.Failed == 0 {
			break
		}
	}
}

func mails(t *testing.T, dir, to string) []*mailcatcher.Mail {
	t.Helper()
	got, err := mailcatcher.For(dir, to)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestInstantAlert: a confirmed alert hears once of a job its search
// lists, across pause and resume; an unconfirmed one and one of another
// city or words hear nothing; the mail carries RFC 8058.
func TestInstantAlert(t *testing.T) {
	r, dir := fixture(t)
	ctx := context.Background()
	run := alertbus.NewNonce()[:8] // this run's addresses, apart from an earlier -count's
	yes := saved(t, r, "yes-"+run+"@seeker.example", "city=lisbon-inst&q=barista", true)
	saved(t, r, "unconfirmed-"+run+"@seeker.example", "city=lisbon-inst&q=barista", false)
	saved(t, r, "other-"+run+"@seeker.example", "city=porto-inst&q=barista", true)
	saved(t, r, "words-"+run+"@seeker.example", "city=lisbon-inst&q=chef", true)
	drain(t, r)
	if got := mails(t, dir, "unconfirmed-"+run+"@seeker.example"); len(got) != 1 || !strings.Contains(got[0].Subject, "Confirm") {
		t.Fatalf("the unconfirmed alert's mails: %d, want its confirmation", len(got))
	}
	job := newJob(t, "Head Barista "+run, "lisbon-inst", "coffee", false)
	drain(t, r)
	got := mails(t, dir, "yes-"+run+"@seeker.example")
	// confirmed before the relay ran: its confirmation is not sent
	if len(got) != 1 {
		var m string
		_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(alert_id||':'||job_id||':'||aa.email, ','), '') FROM alert_matches JOIN alerts a ON a.id = alert_id JOIN alert_addresses aa ON aa.id = a.address_id`).Scan(&m)
		for _, x := range got {
			t.Log(x.Subject)
		}
		t.Fatalf("matches %s; the matching alert got %d mails, want 1", m, len(got))
	}
	var match *mailcatcher.Mail
	for _, m := range got {
		if strings.HasPrefix(m.Subject, "New job") {
			match = m
		}
	}
	if match == nil || !strings.Contains(match.Text, "Head Barista") || !strings.Contains(match.Text, fmt.Sprintf("-%d", job)) {
		t.Fatalf("no match mail naming the job: %+v", got)
	}
	// The mail links the page with its channel, and counts the job shown as
	// an impression of channel alert (job statistics).
	if !strings.Contains(match.Text, fmt.Sprintf("-%d?ref=alert", job)) {
		t.Errorf("the match mail's link lacks ?ref=alert:\n%s", match.Text)
	}
	var shown int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM stats_events WHERE job_id = $1 AND kind = 3 AND channel = 'alert'`, job).Scan(&shown); err != nil || shown != 1 {
		t.Errorf("%d alert impressions of the job (%v), want 1", shown, err)
	}
	unsub := match.Header.Get("List-Unsubscribe")
	if !strings.Contains(unsub, "/alerts/unsubscribe?token=") || match.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q, Post %q", unsub, match.Header.Get("List-Unsubscribe-Post"))
	}
	u, err := url.Parse(strings.Trim(unsub, "<>"))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := (&alertbus.Business{Store: db(r), Signer: r.Signer}).Resolve(ctx, alertbus.PurposeManage, u.Query().Get("token")); err != nil || a.ID != yes.ID {
		t.Fatalf("the unsubscribe link resolves to %v, %v", a.ID, err)
	}
	for who, want := range map[string]int{"other-" + run + "@seeker.example": 0, "words-" + run + "@seeker.example": 0, "unconfirmed-" + run + "@seeker.example": 1} {
		if n := len(mails(t, dir, who)); n != want {
			t.Errorf("%s got %d mails, want only the confirmation", who, n)
		}
	}
	// Pause and resume: visible again, never mailed again.
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: base})
	for _, ev := range []jobbus.Event{jobbus.EventPause, jobbus.EventResume} {
		if _, err := bus.Transition(ctx, jobbus.Caller{KeyID: 1}, job, ev); err != nil {
			t.Fatal(ev, err)
		}
	}
	drain(t, r)
	if n := len(mails(t, dir, "yes-"+run+"@seeker.example")); n != 1 {
		t.Fatalf("after pause and resume %d mails, want still 1", n)
	}
	// Erasure: every alert of the address goes, whatever its case.
	if n, err := db(r).DeleteAddress(ctx, "YES-"+run+"@seeker.example"); err != nil || n != 1 {
		t.Fatalf("erased %d alerts (%v), want 1", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM alert_matches WHERE alert_id = $1`, yes.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d matches left after the erasure (%v)", left, err)
	}
}

// TestMatchesAreTheListing is the property: for random jobs, alerts and
// transitions, the pairs recorded are exactly those whose alert's search
// lists the job when it became visible (the real search statement), and no
// pair is mailed twice.
func TestMatchesAreTheListing(t *testing.T) {
	r, dir := fixture(t)
	ctx := context.Background()
	run := alertbus.NewNonce()[:8] // this run's addresses, apart from an earlier -count's
	rng := rand.New(rand.NewPCG(36, 1))
	cities := []string{"prop-a", "prop-b", "prop-c"}
	tags := []string{"coffee", "events", "community"}
	words := []string{"barista", "manager", "host", "chef"}
	var alerts []alertbus.Alert
	for i := range 40 {
		v := url.Values{}
		if rng.IntN(3) > 0 {
			v.Set("city", cities[rng.IntN(len(cities))])
		}
		if rng.IntN(2) == 0 {
			v.Set("tag", tags[rng.IntN(len(tags))])
		}
		if rng.IntN(2) == 0 || len(v) == 0 {
			v.Set("q", words[rng.IntN(len(words))])
		}
		if rng.IntN(4) == 0 {
			v.Set("remote", "true")
		}
		alerts = append(alerts, saved(t, r, fmt.Sprintf("p%d-%s@seeker.example", i, run), v.Encode(), true))
	}
	drain(t, r)
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: base})
	var jobs []int64
	want := map[[2]int64]bool{}
	// listed records, for the jobs just made visible, the pairs the real
	// search lists now (before the matching round reads them).
	listed := func(visible []int64) {
		for _, a := range alerts {
			f, _ := Parse(a.Search)
			f.JobIDs = visible
			rows, err := jobsearch.List(ctx, pool, f)
			if err != nil {
				t.Fatal(err)
			}
			var j jobbus.Job
			for rows.Next() {
				if err := rows.Scan(&j); err != nil {
					t.Fatal(err)
				}
				want[[2]int64{a.ID, j.ID}] = true
			}
			rows.Close()
		}
	}
	for step := range 60 {
		var visible []int64
		if len(jobs) < 5 || rng.IntN(2) == 0 {
			title := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
			id := newJob(t, fmt.Sprintf("%s %d %s", title, step, run), cities[rng.IntN(len(cities))], tags[rng.IntN(len(tags))]+","+tags[rng.IntN(len(tags))], rng.IntN(2) == 0)
			jobs = append(jobs, id)
			visible = append(visible, id)
		} else {
			id := jobs[rng.IntN(len(jobs))]
			ev := []jobbus.Event{jobbus.EventPause, jobbus.EventResume, jobbus.EventUnpublish, jobbus.EventPublish}[rng.IntN(4)]
			res, err := bus.Transition(ctx, jobbus.Caller{KeyID: 1}, id, ev)
			if err == nil && (ev == jobbus.EventResume || ev == jobbus.EventPublish) && res.Job.Status == jobbus.StatusActive {
				visible = append(visible, id)
			}
		}
		if len(visible) > 0 {
			listed(visible)
		}
		drain(t, r)
	}
	got := map[[2]int64]bool{}
	rows, err := pool.Query(ctx, `SELECT alert_id, job_id FROM alert_matches WHERE alert_id = ANY($1)`, ids(alerts))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p [2]int64
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			t.Fatal(err)
		}
		got[p] = true
	}
	rows.Close()
	for p := range want {
		if !got[p] {
			var evs string
			_ = pool.QueryRow(ctx, `SELECT string_agg(type||':'||status||':'||prev_status, ',' ORDER BY seq) FROM job_events WHERE job_id = $1`, p[1]).Scan(&evs)
			t.Errorf("alert %d lists job %d but was not matched (events %s)", p[0], p[1], evs)
		}
	}
	for p := range got {
		if !want[p] {
			t.Errorf("alert %d matched job %d, which its search did not list", p[0], p[1])
		}
	}
	if len(want) == 0 {
		t.Fatal("no pair at all: the property tested nothing")
	}
	// Each pair mailed once: one match mail per recorded pair, per address.
	for _, a := range alerts {
		n := 0
		seen := map[string]bool{}
		for _, m := range mails(t, dir, a.Email) {
			if strings.HasPrefix(m.Subject, "New job") {
				n++
				if seen[m.Subject] {
					t.Errorf("alert %d got %q twice", a.ID, m.Subject)
				}
				seen[m.Subject] = true
			}
		}
		pairs := 0
		for p := range got {
			if p[0] == a.ID {
				pairs++
			}
		}
		if n != pairs {
			t.Errorf("alert %d: %d match mails for %d pairs", a.ID, n, pairs)
		}
	}
}

func ids(as []alertbus.Alert) []int64 {
	out := make([]int64, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}
