package jobmail

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/statsbus/stores/statsdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

const base = "https://coworkjobs.example"

var (
	pool  *pgxpool.Pool
	quiet = slog.New(slog.DiscardHandler)
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_mail", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 5}}, pgtest.SetPool(&pool)))
}

// insertJob adds a job of a plan with a status, for the poster to.
func insertJob(t *testing.T, status string, plan int, to string) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `INSERT INTO jobs (hash_identifier, fingerprint, title, company, description,
		job_type, tags, slug, city_id, city_name, city_slug, inv_email, plan_id, status, expiration_date)
		VALUES (md5(random()::text), md5(random()::text), 'Community Manager', 'Factory', 'D', 'fulltime', 't',
		        'community-manager-berlin', 1, 'Berlin', 'berlin', $3, $2, $1, now() + interval '30 days')
		RETURNING id`, status, plan, to).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// catcher runs the mail catcher on ln until the test ends.
func catcher(t *testing.T, ln net.Listener) string {
	t.Helper()
	dir := t.TempDir()
	c, err := mailcatcher.New(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return dir
}

func activities(t *testing.T, smtpAddr string) *Activities {
	t.Helper()
	sender, err := mailer.New("smtp://"+smtpAddr, "coworkjobs <jobs@coworkjobs.example>")
	if err != nil {
		t.Fatal(err)
	}
	return &Activities{Jobs: jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: base}), Mail: sender, Stats: statsdb.New(pool)}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Each mail goes to the poster with the job's links, and only while the job
// is in the state the mail is about.
func TestSendJobMail(t *testing.T) {
	ln := listen(t)
	dir := catcher(t, ln)
	acts := activities(t, ln.Addr().String())
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	d, err := acts.Jobs.QueryByID(context.Background(), insertJob(t, "active", 5, "active@poster.example"))
	if err != nil {
		t.Fatal(err)
	}
	// The reminder carries the job's totals.
	now := time.Now()
	if err := statsdb.New(pool).Write(context.Background(), []statsbus.Event{
		{JobID: d.ID, Kind: statsbus.KindView, Channel: "page", At: now, Visitor: 1, N: 1},
		{JobID: d.ID, Kind: statsbus.KindView, Channel: "page", At: now, Visitor: 2, N: 1},
		{JobID: d.ID, Kind: statsbus.KindClick, Channel: "page", At: now, Visitor: 1, N: 3},
	}); err != nil {
		t.Fatal(err)
	}
	paidDraft := insertJob(t, "draft", 6, "paid@poster.example")
	draft := insertJob(t, "draft", 5, "draft@poster.example")
	expired := insertJob(t, "expired", 5, "expired@poster.example")
	badAddress := insertJob(t, "active", 5, "not an address")

	tests := []struct {
		name    string
		in      Input
		to      string
		result  string
		subject string
		body    []string
	}{
		{"createdActive", Input{JobID: d.ID, Kind: KindCreated}, "active@poster.example", ResultSent, `is live`,
			[]string{base + "/jobs/community-manager-berlin-", "/jobs/edit?job=" + d.HashIdentifier, "/jobs/unpublish?job="}},
		{"createdPaidDraft", Input{JobID: paidDraft, Kind: KindCreated}, "paid@poster.example", ResultSent, `one step left`,
			[]string{"Featured plan (49 EUR)", "/jobs/pay?job="}},
		{"createdDraft", Input{JobID: draft, Kind: KindCreated}, "draft@poster.example", ResultSent, `saved as a draft`,
			[]string{"publish it from its page", "/jobs/edit?job="}},
		{"reminder", Input{JobID: d.ID, Kind: KindReminder, ExpiresAt: d.ExpirationDate}, "active@poster.example", ResultSent,
			`expires on`, []string{"relist it", "2 views (2 unique a day), 3 apply clicks (1 unique a day)"}},
		{"reminderOfAMovedDateSkipped", Input{JobID: d.ID, Kind: KindReminder, ExpiresAt: d.ExpirationDate.Add(-time.Hour)}, "", ResultSkipped, "", nil},
		{"expired", Input{JobID: expired, Kind: KindExpired}, "expired@poster.example", ResultSent, `has expired`, []string{"Relist it"}},
		{"expiredOfAnActiveJobSkipped", Input{JobID: d.ID, Kind: KindExpired}, "", ResultSkipped, "", nil},
		{"unknownJobSkipped", Input{JobID: 999999, Kind: KindCreated}, "", ResultSkipped, "", nil},
		{"badAddressSkipped", Input{JobID: badAddress, Kind: KindCreated}, "", ResultSkipped, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := env.ExecuteActivity(acts.SendJobMail, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var res string
			if err := v.Get(&res); err != nil || res != tc.result {
				t.Fatalf("result %q %v, want %q", res, err, tc.result)
			}
			if tc.to == "" {
				return
			}
			got, err := mailcatcher.For(dir, tc.to)
			if err != nil || len(got) == 0 {
				t.Fatalf("no mail to %s: %v", tc.to, err)
			}
			m := got[len(got)-1]
			if !strings.Contains(m.Subject, tc.subject) {
				t.Errorf("subject %q lacks %q", m.Subject, tc.subject)
			}
			for _, want := range tc.body {
				if !strings.Contains(m.Text, want) {
					t.Errorf("body lacks %q:\n%s", want, m.Text)
				}
			}
		})
	}
}

// While SMTP is away the mail waits, with back-off, and goes once it is back.
func TestJobMailWorkflowWaitsForSMTP(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	_ = ln.Close() // nothing answers there yet
	acts := activities(t, addr)
	id := insertJob(t, "active", 5, "patient@poster.example")

	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(JobMailWorkflow)
	env.RegisterActivity(acts)
	attempts := 0
	var dir string
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		attempts++
		if attempts == 3 { // SMTP comes back before the third attempt
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return
			}
			dir = catcher(t, ln2)
		}
	})
	env.ExecuteWorkflow(JobMailWorkflow, Input{JobID: id, Kind: KindCreated})
	var res string
	if err := env.GetWorkflowResult(&res); err != nil || res != ResultSent {
		t.Fatalf("result %q %v", res, err)
	}
	if attempts != 3 {
		t.Fatalf("%d attempts, want 3", attempts)
	}
	if got, _ := mailcatcher.For(dir, "patient@poster.example"); len(got) != 1 {
		t.Fatalf("%d mails after SMTP came back", len(got))
	}
}

func TestWorkflowID(t *testing.T) {
	at := time.Unix(1900000000, 0)
	if got := WorkflowID(Input{JobID: 7, Kind: KindCreated}); got != "job-mail-created-7" {
		t.Fatal(got)
	}
	if got := WorkflowID(Input{JobID: 7, Kind: KindReminder, ExpiresAt: at}); got != "job-mail-reminder-7-1900000000" {
		t.Fatal(got)
	}
}
