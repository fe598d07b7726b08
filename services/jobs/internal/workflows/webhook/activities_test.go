package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/stdwebhook"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_webhook", pgtest.Schema{Name: "jobs", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 5}}, pgtest.SetPool(&pool)))
}

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver answers each request with the next status of answers (the
// last one once they run out) and keeps what it got.
type receiver struct {
	mu      sync.Mutex
	got     []received
	answers []int
	srv     *httptest.Server
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: b})
		status := r.answers[min(len(r.got)-1, len(r.answers)-1)]
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(strings.Repeat("answer ", 400)))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) last(t *testing.T) received {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatal("the receiver got nothing")
	}
	return r.got[len(r.got)-1]
}

// fixture is a job of space, an endpoint of space subscribed to
// job.created at url, and the activities with loopback allowlisted.
func fixture(t *testing.T, space int64, title, url string) (*Activities, hookbus.Endpoint, int64) {
	t.Helper()
	ctx := context.Background()
	hooks := hookdb.New(pool)
	bus := hookbus.New(hooks, hookbus.Config{AllowHTTP: true, Allow: loopback})
	email := "ops@example.com"
	ep, err := bus.Create(ctx, hookbus.Owner{SpaceID: space, KeyID: 1}, hookbus.Input{URL: &url, Events: &[]string{"job.created"}, Email: &email})
	if err != nil {
		t.Fatal(err)
	}
	jobs := jobdb.New(pool)
	from, to, refresh := jobbus.UpdateMoves(false)
	w, err := jobs.Upsert(ctx, jobbus.NewJob{Title: title, Company: "Hook Coworking", Description: "<p>Host</p>", JobType: "fulltime",
		Tags: "community", Slug: "hook", City: jobbus.City{ID: 1, Name: "Berlin", Slug: "berlin"}, SpaceID: space, KeyID: 1,
		Currency: "EUR", InvEmail: "a@b.example", Plan: jobbus.Plan{ID: 5, Name: "Free", ExpirationDays: 30}, Status: jobbus.StatusActive,
		UpdateFrom: from, UpdateTo: to, Refresh: refresh, Fingerprint: jobbus.Fingerprint(title, "Hook", 1, ""),
		HashIdentifier: jobbus.Fingerprint(title, "hash", 0, "")[:32]})
	if err != nil {
		t.Fatal(err)
	}
	allow, _ := outbound.ParseAllow("loopback")
	acts := &Activities{Store: hooks, Readers: eventdb.New(pool), Jobs: jobbus.New(jobs.Stores(), nil, jobbus.Config{PublicBaseURL: "https://coworkjobs.example"}),
		Client: outbound.New(outbound.Config{Allow: allow, Timeout: 2 * time.Second})}
	return acts, ep, w.JobID
}

// dispatched runs ep's pump until its first attempt at job's event (read
// from the endpoint's position) has been made and returns the id of the
// delivery row it left (a failure leaves one).
func dispatched(t *testing.T, acts *Activities, ep hookbus.Endpoint, job int64) int64 {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pumpNow(t, acts, ep)
		var id int64
		err := pool.QueryRow(ctx, `SELECT d.id FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.job_id = $2`, ep.ID, job).Scan(&id)
		if err == nil {
			return id
		}
	}
	t.Fatal("the event was never attempted")
	return 0
}

// pumpNow runs ep's pump until nothing more is due.
func pumpNow(t *testing.T, acts *Activities, ep hookbus.Endpoint) Pumped {
	t.Helper()
	acts.idle = 100 * time.Millisecond
	out, err := acts.Pump(context.Background(), EndpointInput{EndpointID: ep.ID})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dueNow moves delivery id's retry to now (its back-off not waited).
func dueNow(t *testing.T, id int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE webhook_deliveries SET next_try_at = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}

func delivery(t *testing.T, id int64) (status string, code *int, body *string, next *time.Time) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT status, response_status, response_body, next_try_at FROM webhook_deliveries WHERE id = $1`, id).
		Scan(&status, &code, &body, &next); err != nil {
		t.Fatal(err)
	}
	return
}

// A delivery reaches the receiver signed the Standard Webhooks way (ours
// and the npm library verify it), carries the job as its owner reads it,
// is retried after a 500 (logged with the first KiB of the answer), and
// during a rotation is signed by both secrets.
func TestPumpSignsRetriesAndRotates(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 500, 200)
	acts, ep, job := fixture(t, 7001, "Signed Host", rcv.srv.URL+"/hook")
	other, _ := hookbus.New(hookdb.New(pool), hookbus.Config{AllowHTTP: true, Allow: loopback}).Create(ctx, hookbus.Owner{SpaceID: 7002, KeyID: 2},
		hookbus.Input{URL: &rcv.srv.URL, Events: &[]string{"job.created"}})
	id := dispatched(t, acts, ep, job)
	var foreign int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, other.ID).Scan(&foreign); err != nil || foreign != 0 {
		t.Fatalf("another space's endpoint got %d deliveries of this job: %v", foreign, err)
	}

	if out := pumpNow(t, acts, ep); out.NextDue == nil {
		t.Fatalf("a 500 is retried: %+v", out)
	}
	status, code, body, next := delivery(t, id)
	if status != "pending" || code == nil || *code != 500 || body == nil || len(*body) != maxLogged || next == nil {
		t.Fatalf("the 500 logged: %s %v %v %v", status, code, next, body != nil)
	}

	dueNow(t, id)
	if out := pumpNow(t, acts, ep); out.NextDue != nil {
		t.Fatalf("a 200 ends it: %+v", out)
	}
	if status, _, _, _ := delivery(t, id); status != "succeeded" {
		t.Fatalf("status %s", status)
	}
	got := rcv.last(t)
	h := got.header
	if err := stdwebhook.Verify(ep.Secret, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), got.body, time.Now()); err != nil {
		t.Fatalf("our verifier: %v", err)
	}
	verifyWithNPM(t, ep.Secret, got)
	var msg struct {
		ID, Type string
		Data     struct {
			IDJob  int64  `json:"id_job"`
			Title  string `json:"title"`
			Status string `json:"status"`
			Event  struct{ Type string }
			Edit   *string `json:"edit_url"`
		}
	}
	if err := json.Unmarshal(got.body, &msg); err != nil || msg.Type != "job.created" || msg.Data.IDJob != job || msg.Data.Title != "Signed Host" ||
		msg.Data.Status != "active" || msg.Data.Event.Type != "job.created" || msg.Data.Edit != nil || msg.ID != h.Get("webhook-id") {
		t.Fatalf("body: %v %s", err, got.body)
	}

	// Rotation: both secrets sign the next message.
	hooks := hookbus.New(hookdb.New(pool), hookbus.Config{AllowHTTP: true, Allow: loopback})
	rot, err := hooks.RotateSecret(ctx, hookbus.Owner{SpaceID: 7001, KeyID: 1}, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	ping, err := hooks.Ping(ctx, hookbus.Owner{SpaceID: 7001, KeyID: 1}, ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	pumpNow(t, acts, ep)
	if status, _, _, _ := delivery(t, ping.ID); status != "succeeded" {
		t.Fatalf("ping: %s", status)
	}
	got = rcv.last(t)
	h = got.header
	if n := len(strings.Fields(h.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures during a rotation", n)
	}
	for _, s := range []string{ep.Secret, rot.Secret} {
		if err := stdwebhook.Verify(s, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), got.body, time.Now()); err != nil {
			t.Fatalf("secret %s…: %v", s[:10], err)
		}
	}
	verifyWithNPM(t, rot.Secret, got)
	// Once the overlap is over only the new secret signs.
	if _, err := pool.Exec(ctx, `UPDATE webhook_endpoints SET old_secret_until = now() - interval '1 second' WHERE id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Ping(ctx, hookbus.Owner{SpaceID: 7001, KeyID: 1}, ep.ID); err != nil {
		t.Fatal(err)
	}
	pumpNow(t, acts, ep)
	if got = rcv.last(t); stdwebhook.Verify(ep.Secret, got.header.Get("webhook-id"), got.header.Get("webhook-timestamp"),
		got.header.Get("webhook-signature"), got.body, time.Now()) == nil {
		t.Fatal("the old secret still signs after the overlap")
	}
}

// An endpoint failing for 5 days is disabled and its owner mailed through
// the mail outbox and SMTP (the mail catcher): once, and still when the
// mail server was away at first.
func TestPumpDisablesAfterFiveDaysOfFailures(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 503)
	acts, ep, job := fixture(t, 7004, "Failing Host", rcv.srv.URL)
	owner := "failing-owner@example.com"
	id := dispatched(t, acts, ep, job)
	if _, err := pool.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = now() - interval '6 days', email = $2 WHERE id = $1`, ep.ID, owner); err != nil {
		t.Fatal(err)
	}
	dueNow(t, id)
	if out := pumpNow(t, acts, ep); !out.Gone {
		t.Fatalf("%+v", out)
	}
	if status, _, _, _ := delivery(t, id); status != "failed" {
		t.Fatalf("the last delivery: %s", status)
	}
	e, _ := hookdb.New(pool).Get(ctx, hookbus.Owner{SpaceID: 7004, KeyID: 1}, ep.ID)
	if e.Enabled || e.DisabledReason == nil || !strings.Contains(*e.DisabledReason, "5 days") {
		t.Fatalf("after 5 days: %+v", e)
	}
	// Disabling again (a retried activity) queues no second mail.
	if changed, err := acts.Store.Disable(ctx, ep.ID, "again"); err != nil || changed {
		t.Fatalf("second disable: %v %v", changed, err)
	}

	// The mail server is away: the mail stays queued.
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr().String()
	_ = down.Close()
	relay := &outbox.Relay[hookdb.DisabledMail]{Table: acts.Store.MailOutbox(), Deliver: acts.MailDisabled}
	acts.Mail = smtpSender(t, downAddr)
	if res, err := relay.RunOnce(ctx); err != nil || res.Failed == 0 {
		t.Fatalf("with SMTP away: %+v %v", res, err)
	}
	// It is back: the mail goes, once.
	addr, dir := mailcatcher.StartTest(t)
	acts.Mail = smtpSender(t, addr)
	if _, err := pool.Exec(ctx, `UPDATE webhook_mail_outbox SET next_try_at = now()`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := relay.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := mailcatcher.For(dir, owner)
	if err != nil || len(got) != 1 {
		t.Fatalf("mails to the owner: %d %v", len(got), err)
	}
	if m := got[0]; !strings.Contains(m.Subject, "disabled") || !strings.Contains(m.Text, rcv.srv.URL) || !strings.Contains(m.Text, "5 days") {
		t.Fatalf("mail: %q %q", m.Subject, m.Text)
	}
}

func smtpSender(t *testing.T, addr string) mailer.Sender {
	t.Helper()
	s, err := mailer.New("smtp://"+addr, "coworkjobs <jobs@coworkjobs.example>")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Private targets are refused at dial time unless allowlisted: the
// literal loopback address and a name resolving to it alike.
func TestPumpRefusesPrivateTargets(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	port := rcv.srv.URL[strings.LastIndex(rcv.srv.URL, ":")+1:]
	for i, url := range []string{rcv.srv.URL, "http://localhost:" + port + "/x"} {
		acts, ep, job := fixture(t, int64(7010+i), "SSRF Host "+itoa(i), url)
		acts.Client = outbound.New(outbound.Config{})
		id := dispatched(t, acts, ep, job)
		if out := pumpNow(t, acts, ep); out.NextDue == nil {
			t.Fatalf("%s: %+v, want a retry", url, out)
		}
		var lastErr string
		if err := pool.QueryRow(ctx, `SELECT last_error FROM webhook_deliveries WHERE id = $1`, id).Scan(&lastErr); err != nil ||
			!strings.Contains(lastErr, "not allowed") {
			t.Fatalf("%s: %q %v", url, lastErr, err)
		}
	}
	if len(rcv.got) != 0 {
		t.Fatalf("a private target was reached %d times", len(rcv.got))
	}
}

// verifyWithNPM checks a delivery with the npm standardwebhooks package
// (tools/npm), as a receiver written in another language would.
func verifyWithNPM(t *testing.T, secret string, got received) {
	t.Helper()
	modules, _ := filepath.Abs("../../../../../tools/npm/node_modules")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(modules, "standardwebhooks")); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node or tools/npm/node_modules/standardwebhooks missing: npm ci --prefix tools/npm")
		}
		t.Log("skipping the npm standardwebhooks check: node or tools/npm/node_modules missing")
		return
	}
	script := `const { Webhook } = require("standardwebhooks");
const [secret, id, ts, sig, body] = process.argv.slice(1);
new Webhook(secret).verify(body, {"webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig});
console.log("verified");`
	cmd := exec.Command(node, "-e", script, secret, got.header.Get("webhook-id"), got.header.Get("webhook-timestamp"),
		got.header.Get("webhook-signature"), string(got.body))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified") {
		t.Fatalf("npm standardwebhooks refused our delivery: %v %s", err, out)
	}
}

func itoa(i int) string { return string(rune('a' + i)) }

// loopback is what the tests' receivers need registration to allow.
var loopback, _ = outbound.ParseAllow("loopback")
