// Package reliability proves the suite keeps its promises when clients race,
// retry and send garbage and when its dependencies fail: every test drives
// real processes (tests/suite) through the gateway, the way a client would.
//
// Two systems run here. The shared one uses a throwaway database on the
// machine's PostgreSQL and the machine's Redis (under its own key prefix); it
// serves the concurrency, hostile-input and security tests. The private one
// (faults_test.go) has its own PostgreSQL cluster, Redis and Temporal dev
// server (tests/faults), because its tests stop, freeze and crash them.
// docs/reliability.md maps each promise to its test.
package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// Demo key kinds (gateway-keys demo).
const (
	liveKey     = "live platform key"
	importerKey = "trusted importer"
	space1Key   = "space 1 (Pro) key"
	space2Key   = "space 2 (non-Pro) key"
	readOnlyKey = "restricted read-only key"
)

// The demo directory's spaces the demo keys belong to.
const (
	space1Name = "Spreeufer Coworking"
	space2Name = "Tejo Coworking"
)

var (
	shared *suite.Suite
	db     *pgxpool.Pool // the shared system's database
)

// generous lifts the limits a test does not measure, so that hundreds of
// requests from one key or address are answered rather than limited.
var generous = []string{"READ_RATE_LIMIT_PER_MINUTE=0", "PUBLIC_READ_RATE_LIMIT_PER_MINUTE=0",
	"PUBLIC_POST_RATE_LIMIT_PER_MINUTE=100000", "WRITE_RATE_LIMIT_PER_MINUTE=100000"}

func TestMain(m *testing.M) {
	// Stripe configured (never called: every hostile webhook is refused at
	// its signature), so that its webhook route is served and fuzzed.
	o := suite.Options{Name: "reliability", Keys: true,
		Env: append([]string{"STRIPE_SECRET_KEY=sk_test_reliability", "STRIPE_WEBHOOK_SECRET=whsec_reliability",
			"STRIPE_API_BASE=http://127.0.0.1:1"}, generous...)}
	code := suite.Main(m, o, func(sys *suite.Suite) error {
		shared = sys
		var err error
		if db, err = pgxpool.New(context.Background(), sys.DatabaseURL()); err != nil {
			return fmt.Errorf("db: %w", err)
		}
		return nil
	})
	stopPrivate()
	if db != nil {
		db.Close()
	}
	os.Exit(code)
}

// key returns a demo key of the shared system.
func key(t testing.TB, kind string) string {
	t.Helper()
	k, ok := shared.Keys[kind]
	if !ok {
		t.Fatalf("no demo key %q", kind)
	}
	return k
}

// newKey creates a key with gateway-keys create (flags as the command takes
// them) on sys and returns it.
func newKey(t testing.TB, sys *suite.Suite, flags ...string) string {
	t.Helper()
	out, err := sys.Run(context.Background(), "gateway-keys", append([]string{"create", "-json", "-name", t.Name()}, flags...)...)
	if err != nil {
		t.Fatalf("gateway-keys create %v: %v\n%s", flags, err, out)
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		t.Fatalf("gateway-keys create: %q", out)
	}
	return k.Key
}

type envelope = suite.Envelope

type reply struct {
	status int
	header http.Header
	raw    []byte
	env    envelope
	err    error // transport error: no answer at all
}

// code is the envelope's error code ("" on success or without an envelope).
func (r reply) code() string {
	if r.env.Error == nil {
		return ""
	}
	return r.env.Error.Code
}

func (r reply) String() string {
	if r.err != nil {
		return "no answer: " + r.err.Error()
	}
	return fmt.Sprintf("%d %.400s", r.status, r.raw)
}

// envelopeProblem says how r fails to be a well-formed envelope ("" when it is
// one): JSON, the HTTP status repeated, success only below 400, an error with
// a code and a message otherwise.
func (r reply) envelopeProblem() string {
	if r.err != nil {
		return "no answer: " + r.err.Error()
	}
	if r.status == http.StatusNotModified {
		return ""
	}
	var env envelope
	if err := json.Unmarshal(r.raw, &env); err != nil {
		return "not JSON: " + err.Error()
	}
	switch {
	case env.Status != r.status:
		return fmt.Sprintf("envelope status %d, HTTP %d", env.Status, r.status)
	case env.Success != (r.status < 400):
		return fmt.Sprintf("success %v with status %d", env.Success, r.status)
	case r.status >= 400 && (env.Error == nil || env.Error.Code == "" || env.Error.Message == ""):
		return "error without code or message"
	}
	return ""
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 256}}

// send makes one request; hdr is name, value pairs ("X-API-Key", k, ...).
// It never fails the test, so goroutines can use it; see do.
func send(method, url string, body []byte, hdr ...string) reply {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, method, url, body, hdr...)
	if err != nil {
		return reply{err: err}
	}
	return readReply(client.Do(req))
}

// readReply reads a response whole into a reply (err: no response).
func readReply(resp *http.Response, err error) reply {
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw, err: err}
	_ = json.Unmarshal(raw, &r.env)
	return r
}

// do is send that fails the test when there is no answer or the answer is
// not the envelope.
func do(t testing.TB, method, url, body string, hdr ...string) reply {
	t.Helper()
	r := send(method, url, suite.Body(body), hdr...)
	if p := r.envelopeProblem(); p != "" {
		t.Fatalf("%s %s: %s: %s", method, url, p, r)
	}
	return r
}

// into decodes the envelope's data.
func (r reply) into(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.env.Data, v); err != nil {
		t.Fatalf("decode data: %v: %s", err, r)
	}
}

// createResult is the part of POST /v2/jobs's data the tests read.
type createResult struct {
	JobID  int64  `json:"job_id"`
	Action string `json:"action"`
	Status string `json:"status"`
}

// jobBody is a valid create body whose title makes it unique.
func jobBody(title string) string {
	return fmt.Sprintf(`{"title":%q,"company":"Reliability Ltd","description":"<p>Keep the promises</p>","job_type":"fulltime","tags":"ops,community","city_name":"Berlin"}`, title)
}

// count runs a count(*) query on pool.
func count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// eventually polls cond every 200 ms until it holds or limit passes (a bound
// on waiting for a recovery, not a timing assertion).
func eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jsonInto decodes r's data without failing the test (for goroutines).
func jsonInto(r reply, v any) error {
	if err := json.Unmarshal(r.env.Data, v); err != nil {
		return fmt.Errorf("decode data: %w: %s", err, r)
	}
	return nil
}

// randomSuffix makes titles and keys unique per run.
func randomSuffix() string { return suite.RandomHex(4) }
