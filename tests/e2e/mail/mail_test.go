// Package mail runs the suite with Temporal, the jobs worker and a mail
// catcher, and checks through the gateway that a job's poster hears about it:
// on creation, before expiry and on expiry.
package mail

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_mail", &dbURL, nil)) }

func TestPosterMailsThroughTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)

	smtpAddr, dir := mailcatcher.StartTest(t)

	sys := suite.StartTest(t, suite.Options{
		Name: "mail", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtpAddr,
			"JOBS_RELAY_INTERVAL=200ms", "JOBS_REMIND_BEFORE=72h"},
	})
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)

	pro := sys.Keys["space 1 (Pro) key"]
	poster := "poster-" + suite.RandomHex(4) + "@agency.example"
	body := fmt.Sprintf(`{"title":"Mail Test Host","company":"Factory","description":"<p>Host our members.</p>",
		"job_type":"fulltime","tags":"hosting","city_name":"Berlin","inv_email":%q}`, poster)
	var job struct {
		JobID          int64  `json:"job_id"`
		Status         string `json:"status"`
		HashIdentifier string `json:"hash_identifier"`
		EditURL        string `json:"edit_url"`
	}
	if status := call(t, "POST", sys.URL["gateway"]+"/v2/jobs", pro, body, &job); status != 201 || job.Status != "active" {
		t.Fatalf("create: %d %+v", status, job)
	}

	// The creation mail: its links are the job's.
	created := waitMail(t, dir, poster, 1)
	if !strings.Contains(created[0].Subject, "is live") || !strings.Contains(created[0].Text, job.EditURL) {
		t.Fatalf("creation mail %q:\n%s", created[0].Subject, created[0].Text)
	}

	// The job now expires in a few seconds (inside the reminder window):
	// pausing and resuming it through the API moves its timer there.
	if _, err := db.Exec(ctx, `UPDATE jobs.jobs SET expiration_date = now() + interval '4 seconds' WHERE id = $1`, job.JobID); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"pause", "resume"} {
		var res struct{ Action string }
		if status := call(t, "POST", sys.URL["gateway"]+"/v2/jobs/"+ev, pro, fmt.Sprintf(`{"job_id":%d}`, job.JobID), &res); status != 200 {
			t.Fatalf("%s: %d", ev, status)
		}
	}
	mails := waitMail(t, dir, poster, 3)
	if !strings.Contains(mails[1].Subject, "expires on") || !strings.Contains(mails[2].Subject, "has expired") {
		t.Fatalf("mails: %q, %q, %q", mails[0].Subject, mails[1].Subject, mails[2].Subject)
	}
	var detail struct{ Status string }
	if status := call(t, "GET", fmt.Sprintf("%s/v2/jobs/%d", sys.URL["gateway"], job.JobID), pro, "", &detail); status != 200 || detail.Status != "expired" {
		t.Fatalf("after the expiry mail: %d %+v", status, detail)
	}
	// Nothing is sent twice: a few relay rounds later there are still three.
	time.Sleep(2 * time.Second)
	if got, _ := mailcatcher.For(dir, poster); len(got) != 3 {
		t.Fatalf("%d mails, want 3", len(got))
	}
}

// waitMail waits (up to a minute) for n mails to addr, oldest first.
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

func call(t *testing.T, method, url, key, body string, data any) int {
	t.Helper()
	status, raw := suite.Do(t, method, url, key, body)
	var env suite.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if env.Success && data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			t.Fatal(err)
		}
	}
	return status
}
