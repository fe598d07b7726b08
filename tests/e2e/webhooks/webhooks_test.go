// Package webhooks runs the suite with Temporal and the jobs worker, and
// follows a job's life through the gateway to a real HTTP receiver: signed
// deliveries in order, a retry after a 500, the changes feed, a worker
// killed mid-delivery losing nothing.
package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/libs/stdwebhook"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_webhooks", &dbURL, nil)) }

type message struct {
	header http.Header
	body   []byte
	Type   string `json:"type"`
	Data   struct {
		IDJob  int64  `json:"id_job"`
		Status string `json:"status"`
		Event  struct {
			Version int64 `json:"version"`
		} `json:"event"`
	} `json:"data"`
}

// receiver answers 500 to the first request and, while slow is set, takes
// its time; it keeps every request.
type receiver struct {
	mu   sync.Mutex
	got  []message
	all  []message     // every request, answered or not
	slow chan struct{} // closed: answer at once
	n    int
	held int // job.closed requests being held
	// dropped counts held requests whose sender went away
	dropped int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m message
	_ = json.Unmarshal(b, &m)
	m.header, m.body = req.Header.Clone(), b
	r.mu.Lock()
	r.all = append(r.all, m)
	r.n++
	first := r.n == 1
	slow := r.slow
	r.mu.Unlock()
	if first {
		w.WriteHeader(500)
		return
	}
	if m.Type == "job.closed" {
		r.mu.Lock()
		r.held++
		r.mu.Unlock()
		select {
		case <-slow:
		case <-req.Context().Done():
		}
		if req.Context().Err() != nil { // its sender was killed: not delivered
			r.mu.Lock()
			r.dropped++
			r.mu.Unlock()
			return
		}
	}
	r.mu.Lock()
	r.got = append(r.got, m)
	r.mu.Unlock()
	w.WriteHeader(204)
}

func (r *receiver) types(job int64) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.got {
		if m.Data.IDJob == job && (len(out) == 0 || out[len(out)-1] != m.Type) {
			out = append(out, m.Type)
		}
	}
	return out
}

func TestWebhooksThroughTemporal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)
	rcv := &receiver{slow: make(chan struct{})}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)

	var mails mailbox
	mails.addr, mails.dir = mailcatcher.StartTest(t)
	sys := suite.StartTest(t, suite.Options{
		Name: "webhooks", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "JOBS_RELAY_INTERVAL=200ms", "SMTP_URL=smtp://" + mails.addr,
			"WEBHOOKS_ALLOW_HTTP=true", "WEBHOOKS_ALLOW_ADDRESSES=loopback"},
	})
	out, err := sys.Run(ctx, "gateway-keys", "create", "-name", "hooks", "-space", "1", "-scopes", "read,jobs:write,webhooks:manage", "-json")
	if err != nil {
		t.Fatalf("gateway-keys: %v %s", err, out)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	gw := sys.URL["gateway"]

	// A key without webhooks:manage may not register one.
	if st := call(t, "POST", gw+"/v2/webhooks", sys.Keys["space 1 (Pro) key"], `{"url":"https://example.com/h","events":["job.created"]}`, nil); st != 403 {
		t.Fatalf("without the scope: %d", st)
	}
	var ep struct {
		ID     int64
		Secret string
	}
	body := fmt.Sprintf(`{"url":%q,"events":["job.created","job.paused","job.resumed","job.closed"]}`, srv.URL+"/hook")
	if st := call(t, "POST", gw+"/v2/webhooks", k.Key, body, &ep); st != 201 || ep.Secret == "" {
		t.Fatalf("register: %d %+v", st, ep)
	}
	start := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	var job struct {
		JobID  int64 `json:"job_id"`
		Status string
	}
	jb := `{"title":"Webhook Test Host","company":"Factory","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`
	if st := call(t, "POST", gw+"/v2/jobs", k.Key, jb, &job); st != 201 || job.Status != "active" {
		t.Fatalf("create: %d %+v", st, job)
	}
	for _, ev := range []string{"pause", "resume", "close"} {
		if st := call(t, "POST", gw+"/v2/jobs/"+ev, k.Key, fmt.Sprintf(`{"job_id":%d}`, job.JobID), nil); st != 200 {
			t.Fatalf("%s: %d", ev, st)
		}
	}

	// The first message got a 500 and is retried; the rest wait behind it.
	wait(t, 30*time.Second, func() bool { return len(rcv.types(job.JobID)) >= 3 })
	// job.closed is being delivered (the receiver holds it): kill the
	// worker now; the delivery is retried by another worker process.
	wait(t, 30*time.Second, func() bool { rcv.mu.Lock(); defer rcv.mu.Unlock(); return rcv.held > 0 })
	if err := sys.Kill("jobs-worker"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// The receiver sees the killed sender's connection close before it
	// stops hanging, so that attempt is never counted as answered.
	wait(t, 10*time.Second, func() bool { rcv.mu.Lock(); defer rcv.mu.Unlock(); return rcv.dropped > 0 })
	close(rcv.slow)
	if err := sys.Start(ctx, "jobs-worker"); err != nil {
		t.Fatal(err)
	}
	// The pump's heartbeat lapses after webhook.PumpHeartbeatTimeout (15 s)
	// and it runs again on the new worker, which sends what was left
	// pending; without the heartbeat it would wait out the pump's 6-minute
	// start-to-close timeout, past this bound.
	wait(t, 25*time.Second, func() bool { return len(rcv.types(job.JobID)) >= 4 })
	t.Logf("job.closed redelivered %v after the worker was killed", time.Since(killed).Round(100*time.Millisecond))
	// At least once: each event is sent under one webhook-id (its retries
	// included, so a receiver de-duplicates), and each id was answered.
	rcv.mu.Lock()
	ids := map[string]string{}
	for _, m := range rcv.all {
		id := m.header.Get("webhook-id")
		if prev, ok := ids[m.Type]; ok && prev != id {
			t.Errorf("%s sent as %s and %s", m.Type, prev, id)
		}
		ids[m.Type] = id
	}
	answered := map[string]int{}
	for _, m := range rcv.got {
		answered[m.header.Get("webhook-id")]++
	}
	for typ, id := range ids {
		if answered[id] == 0 {
			t.Errorf("%s (%s) answered %d times", typ, id, answered[id])
		}
	}
	if len(ids) != 4 || len(rcv.all) < 6 { // 4 events + the 500 + the killed attempt
		t.Errorf("requests: %d ids, %d requests", len(ids), len(rcv.all))
	}
	rcv.mu.Unlock()
	if got, want := rcv.types(job.JobID), []string{"job.created", "job.paused", "job.resumed", "job.closed"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", got, want)
	}
	rcv.mu.Lock()
	var last int64
	for _, m := range rcv.got {
		h := m.header
		if err := stdwebhook.Verify(ep.Secret, h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), m.body, time.Now()); err != nil {
			t.Fatalf("signature: %v", err)
		}
		if m.Data.Event.Version < last {
			t.Fatalf("versions went back: %d after %d", m.Data.Event.Version, last)
		}
		last = m.Data.Event.Version
	}
	rcv.mu.Unlock()

	var dl struct {
		Deliveries []struct {
			Type     string
			Status   string
			Attempts int
		}
	}
	// The log keeps what failed and what waited behind it (job.created's
	// retry at least); a delivery answered at once leaves no row: the
	// endpoint's position in the event log says it was sent.
	wait(t, 30*time.Second, func() bool {
		call(t, "GET", fmt.Sprintf("%s/v2/webhooks/%d/deliveries", gw, ep.ID), k.Key, "", &dl)
		ok := len(dl.Deliveries) >= 1
		for _, d := range dl.Deliveries {
			ok = ok && d.Status == "succeeded"
		}
		return ok
	})
	retried := false
	for _, d := range dl.Deliveries {
		retried = retried || d.Attempts >= 2
	}
	if !retried {
		t.Fatalf("no delivery shows its retry: %+v", dl)
	}

	// The changes feed through the gateway has the same changes.
	var ch struct {
		Changes []struct {
			IDJob int64 `json:"id_job"`
			Event struct{ Type string }
		}
	}
	if st := call(t, "GET", gw+"/v2/jobs/changes?since="+start, k.Key, "", &ch); st != 200 {
		t.Fatalf("changes: %d", st)
	}
	var feed []string
	for _, c := range ch.Changes {
		if c.IDJob == job.JobID {
			feed = append(feed, c.Event.Type)
		}
	}
	if strings.Join(feed, " ") != "job.created job.paused job.resumed job.closed" {
		t.Fatalf("changes feed: %v", feed)
	}

	disabledAfterFiveDays(t, sys, k.Key, mails)
	attackers(t, sys, k.Key, ep.ID, ep.Secret)
}

type mailbox struct{ addr, dir string }

// disabledAfterFiveDays: an endpoint whose deliveries have failed for 5
// days (failing_since moved back in the database: nobody waits 5 days) is
// disabled by the running worker on its next failure, GET says why, and
// its owner gets the mail through the outbox and SMTP.
func disabledAfterFiveDays(t *testing.T, sys *suite.Suite, key string, mb mailbox) {
	ctx := context.Background()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(failing.Close)
	gw := sys.URL["gateway"]
	owner := "hooks-owner@example.com"
	var ep struct{ ID int64 }
	body := fmt.Sprintf(`{"url":%q,"events":["job.created"],"email":%q}`, failing.URL+"/down", owner)
	if st := call(t, "POST", gw+"/v2/webhooks", key, body, &ep); st != 201 {
		t.Fatalf("register the failing endpoint: %d", st)
	}
	jb := `{"title":"Webhook Failing Host","company":"Factory","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`
	if st := call(t, "POST", gw+"/v2/jobs", key, jb, nil); st != 201 {
		t.Fatalf("create: %d", st)
	}
	var got struct {
		Enabled        bool
		DisabledReason *string `json:"disabled_reason"`
		FailingSince   *string `json:"failing_since"`
	}
	path := fmt.Sprintf("%s/v2/webhooks/%d", gw, ep.ID)
	wait(t, 60*time.Second, func() bool { call(t, "GET", path, key, "", &got); return got.FailingSince != nil })
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `UPDATE jobs.webhook_endpoints SET failing_since = now() - interval '6 days' WHERE id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	// The next retry comes 2.5-5 s after the first failure, then 5-10 s.
	wait(t, 60*time.Second, func() bool { call(t, "GET", path, key, "", &got); return !got.Enabled })
	if got.DisabledReason == nil || !strings.Contains(*got.DisabledReason, "5 days") || !strings.Contains(*got.DisabledReason, "PATCH") {
		t.Fatalf("disabled_reason: %v", got.DisabledReason)
	}
	var m []*mailcatcher.Mail
	wait(t, 30*time.Second, func() bool { m, _ = mailcatcher.For(mb.dir, owner); return len(m) > 0 })
	if len(m) != 1 || !strings.Contains(m[0].Text, failing.URL) || !strings.Contains(m[0].Text, "5 days") {
		t.Fatalf("mails: %d %+v", len(m), m)
	}
}

func wait(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", d)
		}
	}
}

func call(t *testing.T, method, url, key, body string, data any) int {
	t.Helper()
	st, b := raw(t, method, url, key, body)
	if data != nil && st < 300 {
		var env struct{ Data json.RawMessage }
		if err := json.Unmarshal([]byte(b), &env); err != nil || json.Unmarshal(env.Data, data) != nil {
			t.Fatalf("%s %s: %s", method, url, b)
		}
	}
	return st
}
