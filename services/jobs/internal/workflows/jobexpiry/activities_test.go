package jobexpiry

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/testsuite"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/redisx"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/workflows/jobmail"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var (
	pool  *pgxpool.Pool
	quiet = slog.New(slog.DiscardHandler)
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_expiry", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 5}}, pgtest.SetPool(&pool)))
}

// insertJob adds a job with a status and an expiration offset from now.
func insertJob(t *testing.T, status string, expiresIn time.Duration) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `INSERT INTO jobs (hash_identifier, fingerprint, title, company, description,
		job_type, tags, slug, city_id, city_name, city_slug, inv_email, plan_id, status, expiration_date)
		VALUES (md5(random()::text), md5(random()::text), 'T', 'C', 'D', 'fulltime', 't', 's', 1, 'Berlin', 'berlin',
		        'x@example.com', 5, $1, now() + $2::interval) RETURNING id`, status, expiresIn.String()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func statusOf(t *testing.T, id int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `SELECT status FROM jobs WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestExpireJobActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(&Activities{Store: jobdb.New(pool)})

	due := insertJob(t, "active", -time.Minute)
	notDue := insertJob(t, "active", time.Hour)
	paused := insertJob(t, "paused", -time.Minute)

	tests := []struct {
		name        string
		id          int64
		wantExpired bool
		wantStatus  string
		wantWait    bool
	}{
		{"expireDueActive", due, true, "expired", false},
		{"expireAgainIsNoop", due, false, "expired", false},
		{"notDueReportsTheDate", notDue, false, "active", true},
		{"pausedIsLeftAlone", paused, false, "paused", false},
		{"missingJob", 999999, false, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := env.ExecuteActivity((&Activities{}).ExpireJob, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			var res ExpireResult
			if err := v.Get(&res); err != nil {
				t.Fatal(err)
			}
			if res.Expired != tc.wantExpired || res.Status != tc.wantStatus || (res.NotDueUntil != nil) != tc.wantWait {
				t.Fatalf("%+v", res)
			}
		})
	}
	if statusOf(t, paused) != "paused" || statusOf(t, notDue) != "active" {
		t.Fatal("wrong jobs changed")
	}
}

func TestSweepOverdueActivity(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(&Activities{Store: jobdb.New(pool)})
	var overdue []int64
	for i := 0; i < 5; i++ {
		overdue = append(overdue, insertJob(t, "active", -time.Duration(i+1)*time.Hour))
	}
	future := insertJob(t, "active", 24*time.Hour)
	draft := insertJob(t, "draft", -time.Hour)
	v, err := env.ExecuteActivity((&Activities{}).SweepOverdue)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	_ = v.Get(&n)
	if n < 5 {
		t.Fatalf("swept %d", n)
	}
	for _, id := range overdue {
		if statusOf(t, id) != "expired" {
			t.Fatalf("job %d not expired", id)
		}
	}
	if statusOf(t, future) != "active" || statusOf(t, draft) != "draft" {
		t.Fatal("sweep touched a job it must not")
	}
}

// flakyStarter stands in for Temporal: down until up is set.
type flakyStarter struct {
	mu    sync.Mutex
	up    bool
	sent  map[int64]time.Time
	mails []jobmail.Input
}

func (f *flakyStarter) Mail(_ context.Context, in jobmail.Input) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return errors.New("temporal unavailable")
	}
	f.mails = append(f.mails, in)
	return nil
}

func (f *flakyStarter) Schedule(_ context.Context, jobID int64, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.up {
		return errors.New("temporal unavailable")
	}
	f.sent[jobID] = at
	return nil
}

func TestRelayKeepsIntentsWhileTemporalIsDown(t *testing.T) {
	ctx := context.Background()
	store := jobdb.New(pool)
	if _, err := pool.Exec(ctx, `DELETE FROM expiry_outbox`); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Microsecond)
	for id := int64(1); id <= 3; id++ {
		if _, err := pool.Exec(ctx, `INSERT INTO expiry_outbox (job_id, expires_at) VALUES ($1, $2)`, id, at); err != nil {
			t.Fatal(err)
		}
	}
	// and a creation mail, which the relay starts as the poster's mail
	if _, err := pool.Exec(ctx, `INSERT INTO expiry_outbox (job_id, expires_at, kind) VALUES (4, $1, 'created_mail')`, at); err != nil {
		t.Fatal(err)
	}
	st := &flakyStarter{sent: map[int64]time.Time{}}
	relay := &Relay{Outbox: store, Starter: st, Log: quiet, Batch: 10}

	sent, failed, err := relay.RelayOnce(ctx)
	if err != nil || sent != 0 || failed != 1 {
		t.Fatalf("down: sent %d failed %d err %v", sent, failed, err)
	}
	var left int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM expiry_outbox`).Scan(&left)
	if left != 4 {
		t.Fatalf("%d intents left, want 4", left)
	}

	st.mu.Lock()
	st.up = true
	st.mu.Unlock()
	// the failed one backs off; make everything due again for the test
	_, _ = pool.Exec(ctx, `UPDATE expiry_outbox SET next_try_at = now()`)
	sent, failed, err = relay.RelayOnce(ctx)
	if err != nil || sent != 4 || failed != 0 {
		t.Fatalf("up: sent %d failed %d err %v", sent, failed, err)
	}
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM expiry_outbox`).Scan(&left)
	if left != 0 || len(st.sent) != 3 || !st.sent[2].Equal(at) {
		t.Fatalf("left %d sent %v", left, st.sent)
	}
	if len(st.mails) != 1 || st.mails[0] != (jobmail.Input{JobID: 4, Kind: jobmail.KindCreated}) {
		t.Fatalf("mails %v", st.mails)
	}
}

// meetingStarter stands in for Temporal and records how many sends were in
// flight at once: each send waits (up to a bound) for a second one to arrive.
type meetingStarter struct {
	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int
	most     int
	sent     int
}

func (m *meetingStarter) Mail(context.Context, jobmail.Input) error {
	return m.Schedule(context.Background(), 0, time.Time{})
}

func (m *meetingStarter) Schedule(context.Context, int64, time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight++
	m.most = max(m.most, m.inFlight)
	m.cond.Broadcast()
	deadline := time.Now().Add(500 * time.Millisecond)
	for m.inFlight < 2 && time.Now().Before(deadline) {
		time.AfterFunc(50*time.Millisecond, m.cond.Broadcast) // wakes the wait to look at the bound
		m.cond.Wait()
	}
	m.inFlight--
	m.sent++
	return nil
}

// Once the first intent of a round went through, the rest are sent
// concurrently (a sequential relay fell behind a burst of creates in the
// soak run), and every one is sent and removed.
func TestRelaySendsConcurrentlyOnceTheTargetAnswers(t *testing.T) {
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `DELETE FROM expiry_outbox`); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 20; id++ {
		if _, err := pool.Exec(ctx, `INSERT INTO expiry_outbox (job_id, expires_at) VALUES ($1, now() + interval '1 day')`, id); err != nil {
			t.Fatal(err)
		}
	}
	st := &meetingStarter{}
	st.cond = sync.NewCond(&st.mu)
	relay := &Relay{Outbox: jobdb.New(pool), Starter: st, Log: quiet, Batch: 100}
	sent, failed, err := relay.RelayOnce(ctx)
	if err != nil || sent != 20 || failed != 0 || st.sent != 20 {
		t.Fatalf("sent %d (starter saw %d) failed %d err %v", sent, st.sent, failed, err)
	}
	if st.most < 2 {
		t.Fatalf("at most %d send in flight: the relay sends one at a time", st.most)
	}
	var left int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM expiry_outbox`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d intents left", left)
	}
}

func TestPurgeIdempotencyKeys(t *testing.T) {
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO idempotency_keys (key_id, idem_key, request_hash, response_status, response_body, job_id, created_at)
		VALUES (1, 'old', 'h', 201, '{}', 1, now() - interval '25 hours'), (1, 'new', 'h', 201, '{}', 1, now())`)
	if err != nil {
		t.Fatal(err)
	}
	n, err := jobdb.New(pool).PurgeIdempotencyKeys(ctx, time.Now().Add(-24*time.Hour), 100)
	if err != nil || n != 1 {
		t.Fatalf("purged %d err %v", n, err)
	}
}

// An expiry is a write the readers must see at once: it bumps every job's
// version and every space's view (jobs:bulk); a job not due bumps nothing.
func TestExpiryBumpsChangeVersions(t *testing.T) {
	ctx := context.Background()
	rdb, err := redisx.Open("redis://127.0.0.1:6379/13") // this test's own
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rdb.Close() }()
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	v := changes.New(rdb, "test:")
	if err := v.Ensure(ctx, scopes.Jobs, scopes.JobsBulk); err != nil {
		t.Fatal(err)
	}
	read := func() []uint64 {
		vs, err := v.Read(ctx, nil, scopes.Jobs, scopes.JobsBulk)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	acts := &Activities{Store: jobdb.New(pool), Changes: v}
	env.RegisterActivity(acts)

	v0 := read()
	if _, err := env.ExecuteActivity(acts.ExpireJob, insertJob(t, "active", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if v1 := read(); v1[0] != v0[0] || v1[1] != v0[1] {
		t.Fatalf("a job not due moved the versions: %v → %v", v0, v1)
	}
	if _, err := env.ExecuteActivity(acts.ExpireJob, insertJob(t, "active", -time.Minute)); err != nil {
		t.Fatal(err)
	}
	v2 := read()
	if v2[0] != v0[0]+1 || v2[1] != v0[1]+1 {
		t.Fatalf("an expiry moved the versions %v → %v; want both by one", v0, v2)
	}
	insertJob(t, "active", -2*time.Hour)
	if _, err := env.ExecuteActivity(acts.SweepOverdue); err != nil {
		t.Fatal(err)
	}
	if v3 := read(); v3[0] <= v2[0] || v3[1] <= v2[1] {
		t.Fatalf("a sweep that expired jobs left the versions at %v", v3)
	}
}
