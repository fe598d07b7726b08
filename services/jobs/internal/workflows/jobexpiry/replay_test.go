package jobexpiry

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/temporalx/replaytest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
)

// TestReplayHistories replays the histories of real runs recorded in
// testdata/histories: a change that running expiry workflows could not
// replay fails here. The v0- files were recorded before the poster mails
// (versionPosterMails) and stay, for the runs started before them. After changing a workflow on purpose (behind
// workflow.GetVersion), record the new path too:
//
//	go test -tags=grpcnotrace ./services/jobs/internal/workflows/jobexpiry/ -run TestRecordHistories -record
func TestReplayHistories(t *testing.T) {
	replaytest.Replay(t, RegisterWorkflows)
}

// TestRecordHistories runs each path of the workflows on a Temporal dev
// server with the real activities and the jobs database, started the way
// production starts them, and writes their histories.
func TestRecordHistories(t *testing.T) {
	rec := replaytest.NewRecorder(t)
	ctx := context.Background()
	// The poster's mails go to a catcher.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mailDir := t.TempDir()
	catcher, err := mailcatcher.New(mailDir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopCatcher := context.WithCancel(ctx)
	defer stopCatcher()
	go func() { _ = catcher.Serve(cctx, ln) }()
	sender, err := mailer.New("smtp://"+ln.Addr().String(), "jobs@coworkjobs.example")
	if err != nil {
		t.Fatal(err)
	}
	mails := &jobmail.Activities{Jobs: jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: "https://coworkjobs.example"}), Mail: sender}

	replaytest.StartWorker(rec, TaskQueue, Register, &Activities{Store: jobdb.New(pool), Mail: mails})
	starter := TemporalStarter{Client: rec.Client}

	expiresAt := func(id int64) time.Time {
		var at time.Time
		if err := pool.QueryRow(ctx, `SELECT expiration_date FROM jobs WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	schedule := func(id int64, at time.Time) {
		if err := starter.Schedule(ctx, id, at); err != nil {
			t.Fatal(err)
		}
	}
	run := func(id int64) client.WorkflowRun { return rec.Client.GetWorkflow(ctx, JobExpiryWorkflowID(id), "") }
	wantStatus := func(name string, id int64, want string) {
		if got := statusOf(t, id); got != want {
			t.Fatalf("%s: job status %q, want %q", name, got, want)
		}
	}
	const done = enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED

	// The timer fires at the date and the job expires.
	id := insertJob(t, "active", 2*time.Second)
	schedule(id, expiresAt(id))
	rec.Save("expiry-expired", run(id), done)
	wantStatus("expired", id, "expired")

	// The date is moved later (the API signals the running workflow):
	// the timer is cancelled and a new one waits for the new date.
	id = insertJob(t, "active", 3*time.Second)
	schedule(id, expiresAt(id))
	time.Sleep(time.Second)
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = expiration_date + interval '2 seconds' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	schedule(id, expiresAt(id))
	h := rec.Save("expiry-moved-by-signal", run(id), done)
	wantStatus("moved-by-signal", id, "expired")
	if replaytest.Count(h, enumspb.EVENT_TYPE_TIMER_CANCELED) == 0 {
		t.Fatal("moved-by-signal: no timer was cancelled")
	}

	// The date moved in the database without a signal: the activity answers
	// NotDueUntil and the workflow waits again.
	id = insertJob(t, "active", 2*time.Second)
	schedule(id, expiresAt(id))
	if _, err := pool.Exec(ctx, `UPDATE jobs SET expiration_date = expiration_date + interval '2 seconds' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	h = rec.Save("expiry-moved-in-store", run(id), done)
	wantStatus("moved-in-store", id, "expired")
	if n := replaytest.Count(h, enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED); n != 2 {
		t.Fatalf("moved-in-store: %d activities, want 2", n)
	}

	// The job was closed (unpublished) before its date: nothing to expire.
	id = insertJob(t, "active", 2*time.Second)
	schedule(id, expiresAt(id))
	if _, err := pool.Exec(ctx, `UPDATE jobs SET status = 'closed' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	rec.Save("expiry-closed-before-date", run(id), done)
	wantStatus("closed-before-date", id, "closed")

	// A date already past (a late start): expired at once, no timer.
	id = insertJob(t, "active", -time.Minute)
	schedule(id, expiresAt(id))
	h = rec.Save("expiry-past-date", run(id), done)
	wantStatus("past-date", id, "expired")
	if n := replaytest.Count(h, enumspb.EVENT_TYPE_TIMER_STARTED); n != 0 {
		t.Fatalf("past-date: %d timers", n)
	}

	// The sweep, as its schedule starts it.
	id = insertJob(t, "active", -time.Hour)
	sr, err := rec.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: SweepWorkflowID, TaskQueue: TaskQueue}, SweepWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	rec.Save("sweep", sr, done)
	wantStatus("sweep", id, "expired")

	// With reminders: the reminder mail before the date, the expiry mail
	// after it, each a child workflow that outlives the expiry.
	reminding := TemporalStarter{Client: rec.Client, RemindBefore: 2 * time.Second}
	id = insertJob(t, "active", 4*time.Second)
	if err := reminding.Schedule(ctx, id, expiresAt(id)); err != nil {
		t.Fatal(err)
	}
	h = rec.Save("expiry-with-mails", run(id), done)
	wantStatus("with-mails", id, "expired")
	if n := replaytest.Count(h, enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED); n != 2 {
		t.Fatalf("with-mails: %d mails started, want 2", n)
	}
	for _, kind := range []jobmail.Kind{jobmail.KindReminder, jobmail.KindExpired} {
		in := jobmail.Input{JobID: id, Kind: kind, ExpiresAt: expiresAt(id)}
		rec.Save("mail-"+string(kind), rec.Client.GetWorkflow(ctx, jobmail.WorkflowID(in), ""), done)
	}
	var hash string
	_ = pool.QueryRow(ctx, `SELECT hash_identifier FROM jobs WHERE id = $1`, id).Scan(&hash)
	caught, _ := mailcatcher.For(mailDir, "x@example.com")
	var subjects []string
	for _, m := range caught {
		if strings.Contains(m.Text, hash) {
			subjects = append(subjects, m.Subject)
		}
	}
	if len(subjects) != 2 {
		t.Fatalf("with-mails: mails %q, want a reminder and an expiry", subjects)
	}

	// The creation mail, as the relay starts it.
	id = insertJob(t, "draft", time.Hour)
	if err := reminding.Mail(ctx, jobmail.Input{JobID: id, Kind: jobmail.KindCreated}); err != nil {
		t.Fatal(err)
	}
	rec.Save("mail-created", rec.Client.GetWorkflow(ctx, jobmail.WorkflowID(jobmail.Input{JobID: id, Kind: jobmail.KindCreated}), ""), done)
}
