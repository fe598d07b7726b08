package indexing

import (
	"bufio"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus/stores/eventdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus/stores/indexdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var dbURL string

// TestMain migrates the package's database once (its extensions), and
// each test then has a schema of its own: the notices' position and quota
// are one per schema.
func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobs_indexing", pgtest.Schema{Name: "jobs", Migrations: migrations.FS},
		func(db pgtest.Migrated) error { dbURL = db.URL; return nil }))
}

const base = "https://coworkjobs.example"

// fake is Google: the OAuth2 token endpoint and the Indexing API's batch
// endpoint, checking each request as Google documents it.
type fake struct {
	t   testing.TB
	srv *httptest.Server
	key *rsa.PrivateKey

	mu     sync.Mutex
	tokens map[string]bool
	calls  int
	// got is every notice the API accepted, in order.
	got []notice
	// answer, when set, picks the batch's status (0: answer the parts) and
	// each part's (by its index in the call).
	answer func(call int) (batch int, part func(i int) int)
}

type notice struct{ URL, Type string }

func newFake(t testing.TB) *fake {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, key: key, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /batch", f.batch)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// credential is a service-account JSON key whose token_uri is the fake's.
func (f *fake) credential() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(f.key)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "notices@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": f.srv.URL + "/token"})
	return b
}

func (f *fake) fail(w http.ResponseWriter, format string, a ...any) {
	f.t.Errorf("fake Google: "+format, a...)
	http.Error(w, fmt.Sprintf(format, a...), http.StatusBadRequest)
}

// token checks the JWT bearer grant (signed with the key, for the indexing
// scope, to the token URL) and issues a token.
func (f *fake) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		f.fail(w, "token: grant %q", r.PostForm.Get("grant_type"))
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		f.fail(w, "token: assertion is not a JWT")
		return
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&f.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		f.fail(w, "token: signature: %v", err)
		return
	}
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct{ Iss, Scope, Aud string }
	if err := json.Unmarshal(raw, &claims); err != nil || claims.Scope != Scope || claims.Aud != f.srv.URL+"/token" ||
		claims.Iss != "notices@p.iam.gserviceaccount.com" {
		f.fail(w, "token: claims %s", raw)
		return
	}
	f.mu.Lock()
	tok := fmt.Sprintf("tok-%d", len(f.tokens)+1)
	f.tokens[tok] = true
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
}

func (f *fake) batch(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !f.tokens[tok] {
		f.fail(w, "batch: authorization %q is no token we issued", r.Header.Get("Authorization"))
		return
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" || params["boundary"] == "" {
		f.fail(w, "batch: content type %q", r.Header.Get("Content-Type"))
		return
	}
	type part struct {
		id string
		n  notice
	}
	var parts []part
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.fail(w, "batch: %v", err)
			return
		}
		if p.Header.Get("Content-Type") != "application/http" || p.Header.Get("Content-ID") == "" {
			f.fail(w, "batch: part header %v", p.Header)
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(p))
		if err != nil || req.Method != http.MethodPost || req.URL.Path != "/v3/urlNotifications:publish" ||
			req.Header.Get("Content-Type") != "application/json" {
			f.fail(w, "batch: part request %v %v", req, err)
			return
		}
		dec := json.NewDecoder(req.Body)
		dec.DisallowUnknownFields()
		var n notice
		if err := dec.Decode(&n); err != nil || !strings.HasPrefix(n.URL, base+"/jobs/") || (n.Type != "URL_UPDATED" && n.Type != "URL_DELETED") {
			f.fail(w, "batch: part body %+v %v", n, err)
			return
		}
		parts = append(parts, part{p.Header.Get("Content-ID"), n})
	}
	if len(parts) == 0 || len(parts) > 100 {
		f.fail(w, "batch: %d parts", len(parts))
		return
	}
	call := f.calls
	f.calls++
	partStatus := func(int) int { return http.StatusOK }
	if f.answer != nil {
		var st int
		st, pf := f.answer(call)
		if st != 0 {
			w.WriteHeader(st)
			return
		}
		if pf != nil {
			partStatus = pf
		}
	}
	mw := multipart.NewWriter(w)
	w.Header().Set("Content-Type", "multipart/mixed; boundary="+mw.Boundary())
	for i, p := range parts {
		st := partStatus(i)
		if st == http.StatusOK {
			f.got = append(f.got, p.n)
		}
		pw, _ := mw.CreatePart(map[string][]string{"Content-Type": {"application/http"},
			"Content-ID": {"<response-" + strings.Trim(p.id, "<>") + ">"}})
		body := fmt.Sprintf(`{"urlNotificationMetadata":{"url":%q}}`, p.n.URL)
		_, _ = fmt.Fprintf(pw, "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: %d\r\n\r\n%s",
			st, http.StatusText(st), len(body), body)
	}
	_ = mw.Close()
}

func (f *fake) received() []notice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]notice(nil), f.got...)
}

// clock is the relay's injectable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type env struct {
	pool  *pgxpool.Pool
	jobs  *jobdb.Store
	bus   *jobbus.Business
	fake  *fake
	clock *clock
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	return openEnv(t)
}

func openEnv(t testing.TB) *env {
	schema := fmt.Sprintf("jobs_%s_%d", strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())), mrand.IntN(1e6))
	pool := pgtest.Open(t, dbURL, pgtest.Schema{Name: schema, Migrations: migrations.FS, Pool: pg.Options{MaxConns: 4}})
	jobs := jobdb.New(pool)
	// the clock runs ahead of now() in the database: notices the test writes are due at once
	return &env{pool: pool, jobs: jobs, bus: jobbus.New(jobs.Stores(), nil, jobbus.Config{PublicBaseURL: base}), fake: newFake(t),
		clock: &clock{now: time.Now().Add(time.Hour)}}
}

func (e *env) relay(t testing.TB, quota int) *Relay {
	c, err := NewClient(e.fake.credential(), e.fake.srv.URL, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return &Relay{Store: indexdb.New(e.pool), Readers: eventdb.New(e.pool), Send: c.Send, BaseURL: base, DailyQuota: quota, Now: e.clock.Now,
		MinBackoff: time.Minute, MaxBackoff: time.Hour}
}

// post creates a job in status (draft or active) and returns it.
func (e *env) post(t testing.TB, title, status string) jobbus.Written {
	from, to, refresh := jobbus.UpdateMoves(false)
	w, err := e.jobs.Upsert(context.Background(), jobbus.NewJob{Title: title, Company: "Notice Coworking", Description: "<p>Host</p>",
		JobType: "fulltime", Tags: "community", Slug: "host", City: jobbus.City{ID: 1, Name: "Berlin", Slug: "berlin"}, SpaceID: 0, KeyID: 1,
		Currency: "EUR", InvEmail: "a@b.example", Plan: jobbus.Plan{ID: 5, Name: "Free", ExpirationDays: 30}, Status: status,
		UpdateFrom: from, UpdateTo: to, Refresh: refresh, Fingerprint: jobbus.Fingerprint(title, "Notice", 1, ""),
		HashIdentifier: jobbus.Fingerprint(title, "hash", 0, "")[:32]})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env) job(t testing.TB, id int64) jobbus.Detail {
	d, err := e.jobs.QueryByID(context.Background(), id, jobbus.Reader{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func pageURL(d jobbus.Detail) string { return base + "/jobs/" + jobbus.PageURL(d.Slug, d.ID) }

// dispatchAll runs dispatch rounds until every committed event has been
// read. The commit horizon is the cluster's, so other tests' transactions
// may hold it back a moment: it waits for it.
func dispatchAll(t testing.TB, r *Relay) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := r.DispatchOnce(ctx); err != nil {
			t.Fatal(err)
		}
		var behind int
		if err := r.Store.(*indexdb.Store).Pool().QueryRow(ctx, `SELECT count(*) FROM job_events e, event_readers p
			WHERE p.reader = 'indexing' AND (e.xid, e.seq) > (p.xid, p.seq)`).Scan(&behind); err != nil {
			t.Fatal(err)
		}
		if behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d events unread", behind)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// drain reads every committed event and sends until nothing is due now;
// it returns the last round.
func drain(t testing.TB, r *Relay) indexdb.Round {
	t.Helper()
	dispatchAll(t, r)
	for {
		res, err := r.SendOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Sent+res.Retried+res.Failed == 0 {
			return res
		}
	}
}

func pending(t *testing.T, pool *pgxpool.Pool) (n int) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM indexing_notices WHERE status = 'pending'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOneNoticePerURLAndVersionNoneForDrafts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, b := e.post(t, "Community host A", jobbus.StatusActive), e.post(t, "Community host B", jobbus.StatusActive)
	draft := e.post(t, "Community host draft", jobbus.StatusDraft)
	// a draft's edits are no notice either
	if _, err := e.jobs.Edit(ctx, draft.JobID, jobbus.Edited{Title: "Draft still", Company: "Notice Coworking", Description: "<p>x</p>",
		JobType: "fulltime", Slug: "host", Currency: "EUR", Fingerprint: "fp-draft"}); err != nil {
		t.Fatal(err)
	}
	r := e.relay(t, 200)
	drain(t, r)
	want := []notice{{pageURL(e.job(t, a.JobID)), "URL_UPDATED"}, {pageURL(e.job(t, b.JobID)), "URL_UPDATED"}}
	if got := e.fake.received(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("notices %v, want %v", got, want)
	}
	// The dispatch read again from the start (its position lost) and a
	// second relay on the same rows send nothing twice.
	if _, err := e.pool.Exec(ctx, `UPDATE event_readers SET xid = '0', seq = 0 WHERE reader = 'indexing'`); err != nil {
		t.Fatal(err)
	}
	drain(t, e.relay(t, 200))
	drain(t, r)
	if got := e.fake.received(); len(got) != 2 {
		t.Fatalf("notices after a replay %v, want the two", got)
	}
	// pausing a deletes its URL
	if _, err := e.bus.TransitionByHash(ctx, a.HashIdentifier, jobbus.EventPause); err != nil {
		t.Fatal(err)
	}
	drain(t, r)
	if got := e.fake.received(); len(got) != 3 || got[2] != (notice{pageURL(e.job(t, a.JobID)), "URL_DELETED"}) {
		t.Fatalf("notices %v, want a URL_DELETED last", got)
	}
	if e.fake.calls != 2 {
		t.Fatalf("%d calls, want 2 batches", e.fake.calls)
	}
	// the poster's distribution record: the latest notice, sent, and none for the draft
	dist, err := indexbus.Record(ctx, r.Store.(*indexdb.Store), a.JobID, jobbus.StatusPaused, 5, nil)
	if err != nil || dist.Indexing == nil || dist.Indexing.Type != "URL_DELETED" || dist.Indexing.Status != "sent" ||
		dist.Indexing.SentAt == nil || dist.Indexing.URL != pageURL(e.job(t, a.JobID)) || len(dist.ListedIn) != 0 {
		t.Fatalf("a's record %+v %v", dist, err)
	}
	if dist, err := indexbus.Record(ctx, r.Store.(*indexdb.Store), draft.JobID, jobbus.StatusDraft, 5, nil); err != nil || dist.Indexing != nil {
		t.Fatalf("the draft's record %+v %v", dist, err)
	}
	if dist, err := indexbus.Record(ctx, r.Store.(*indexdb.Store), b.JobID, jobbus.StatusActive, 5, []int{6}); err != nil ||
		fmt.Sprint(dist.ListedIn) != "[sitemap feeds]" || dist.Indexing == nil || dist.Indexing.Type != "URL_UPDATED" {
		t.Fatalf("b's record (its plan not the aggregators') %+v %v", dist, err)
	}
}

func TestBatchesOfAtMostAHundred(t *testing.T) {
	e := newEnv(t)
	for i := range 130 {
		e.post(t, fmt.Sprintf("Batch host %d", i), jobbus.StatusActive)
	}
	drain(t, e.relay(t, 1000))
	if n := len(e.fake.received()); n != 130 || e.fake.calls != 2 {
		t.Fatalf("%d notices in %d calls, want 130 in 2", n, e.fake.calls)
	}
}

func TestQuotaDefersToTheNextDay(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.post(t, fmt.Sprintf("Quota host %d", i), jobbus.StatusActive)
	}
	r := e.relay(t, 2)
	r.Metrics = NewMetrics(prometheusRegistry())
	res := drain(t, r)
	if n := len(e.fake.received()); n != 2 || res.Waiting != 3 {
		t.Fatalf("day 1: %d sent, %d waiting; want 2 and 3", n, res.Waiting)
	}
	if v := gaugeValue(r.Metrics.Waiting); v != 3 {
		t.Fatalf("waiting gauge %v, want 3", v)
	}
	e.clock.add(24 * time.Hour)
	drain(t, r)
	if n := len(e.fake.received()); n != 4 {
		t.Fatalf("day 2: %d sent in all, want 4", n)
	}
	e.clock.add(24 * time.Hour)
	res = drain(t, r)
	if n := len(e.fake.received()); n != 5 || res.Waiting != 0 || pending(t, e.pool) != 0 {
		t.Fatalf("day 3: %d sent in all, %d waiting; want 5 and 0", n, res.Waiting)
	}
	if v := counterValue(r.Metrics.Sent); v != 5 {
		t.Fatalf("sent counter %v, want 5", v)
	}
}

func TestRetriesWithBackoff(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.post(t, fmt.Sprintf("Retry host %d", i), jobbus.StatusActive)
	}
	// call 0: 503 as a whole; call 1: the second part 429, the third 500; then all well
	e.fake.answer = func(call int) (int, func(int) int) {
		switch call {
		case 0:
			return http.StatusServiceUnavailable, nil
		case 1:
			return 0, func(i int) int { return [...]int{200, 429, 500}[i] }
		}
		return 0, nil
	}
	r := e.relay(t, 200)
	ctx := context.Background()
	if res := drain(t, r); pending(t, e.pool) != 3 || e.fake.calls != 1 || res.Sent != 0 {
		t.Fatalf("first round %+v, %d pending, %d calls; want 3 pending after one call", res, pending(t, e.pool), e.fake.calls)
	}
	// not due again before the back-off
	if res, err := r.SendOnce(ctx); err != nil || res.Sent+res.Retried != 0 {
		t.Fatalf("a round within the back-off %+v %v, want nothing", res, err)
	}
	e.clock.add(time.Minute) // the first back-off is at most MinBackoff
	if res, err := r.SendOnce(ctx); err != nil || res.Sent != 1 || res.Retried != 2 {
		t.Fatalf("second round %+v %v, want 1 sent 2 retried", res, err)
	}
	var attempts int
	if err := e.pool.QueryRow(ctx, `SELECT max(attempts) FROM indexing_notices`).Scan(&attempts); err != nil || attempts != 2 {
		t.Fatalf("attempts %d %v, want 2", attempts, err)
	}
	e.clock.add(2 * time.Minute)
	drain(t, r)
	if n := len(e.fake.received()); n != 3 || pending(t, e.pool) != 0 {
		t.Fatalf("%d sent, want 3 and none pending", n)
	}
}

func TestNothingLostAcrossARestart(t *testing.T) {
	e := newEnv(t)
	e.post(t, "Restart host 1", jobbus.StatusActive)
	// The first worker reaches no API (its address is a closed port): the
	// notice waits in the table.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	first := e.relay(t, 200)
	c, _ := NewClient(e.fake.credential(), down.URL, time.Second)
	first.Send = c.Send
	if res := drain(t, first); res.Retried != 0 || pending(t, e.pool) != 1 {
		t.Fatalf("%+v, want the notice retried and pending", res)
	}
	// Events written while no worker runs, then a new worker.
	e.post(t, "Restart host 2", jobbus.StatusActive)
	e.clock.add(time.Hour)
	drain(t, e.relay(t, 200))
	if n := len(e.fake.received()); n != 2 || pending(t, e.pool) != 0 {
		t.Fatalf("%d sent after the restart, want 2", n)
	}
}

// TestNoticesAreThePublicStateChanges runs random transitions on a few jobs
// and checks that the notices sent are exactly the changes that left a job
// active (URL_UPDATED) or took it out of active (URL_DELETED), each once.
func TestNoticesAreThePublicStateChanges(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	rng := mrand.New(mrand.NewPCG(seed, 37))
	t.Logf("seed %d", seed)
	r := e.relay(t, 10000)
	var hashes []string
	var ids []int64
	var want []notice
	for i := range 6 {
		status := jobbus.StatusDraft
		if rng.IntN(2) == 0 {
			status = jobbus.StatusActive
		}
		w := e.post(t, fmt.Sprintf("Property host %d", i), status)
		hashes, ids = append(hashes, w.HashIdentifier), append(ids, w.JobID)
		if status == jobbus.StatusActive {
			want = append(want, notice{pageURL(e.job(t, w.JobID)), "URL_UPDATED"})
		}
	}
	events := []jobbus.Event{jobbus.EventPublish, jobbus.EventPause, jobbus.EventResume, jobbus.EventRelist, jobbus.EventClose,
		jobbus.EventUnpublish, "edit"}
	for step := range 80 {
		i := rng.IntN(len(ids))
		before := e.job(t, ids[i])
		ev := events[rng.IntN(len(events))]
		var err error
		if ev == "edit" {
			_, err = e.jobs.Edit(ctx, ids[i], jobbus.Edited{Title: before.Title, Company: before.Company, Description: fmt.Sprintf("<p>v%d</p>", step),
				JobType: "fulltime", Slug: before.Slug, Currency: "EUR", Fingerprint: jobbus.Fingerprint(before.Title, "Notice", 1, "")})
		} else {
			_, err = e.bus.TransitionByHash(ctx, hashes[i], ev)
		}
		var refused *jobbus.ConflictError
		if err != nil && !errors.As(err, &refused) {
			t.Fatalf("step %d %s: %v", step, ev, err)
		}
		after := e.job(t, ids[i])
		if after.Version != before.Version {
			if typ := indexbus.Type(after.Status, before.Status); typ != "" {
				want = append(want, notice{pageURL(after), typ})
			}
		}
		if rng.IntN(10) == 0 { // the worker runs now and then, in the middle
			drain(t, r)
		}
	}
	drain(t, r)
	got := e.fake.received()
	if fmt.Sprint(sortedNotices(got)) != fmt.Sprint(sortedNotices(want)) {
		t.Fatalf("seed %d: sent %d notices %v\nwant %d %v", seed, len(got), got, len(want), want)
	}
	// and in each job's order
	for _, id := range ids {
		u := pageURL(e.job(t, id))
		if fmt.Sprint(filter(got, u)) != fmt.Sprint(filter(want, u)) {
			t.Fatalf("seed %d: job %d's notices out of order: %v, want %v", seed, id, filter(got, u), filter(want, u))
		}
	}
}

func TestNoticeType(t *testing.T) {
	for _, c := range []struct{ status, prev, want string }{
		{"active", "draft", "URL_UPDATED"}, {"active", "active", "URL_UPDATED"}, {"active", "paused", "URL_UPDATED"},
		{"paused", "active", "URL_DELETED"}, {"expired", "active", "URL_DELETED"}, {"closed", "active", "URL_DELETED"},
		{"draft", "draft", ""}, {"draft", "", ""}, {"closed", "paused", ""},
	} {
		if got := indexbus.Type(c.status, c.prev); got != c.want {
			t.Errorf("Type(%s, %s) = %q, want %q", c.status, c.prev, got, c.want)
		}
	}
}

func sortedNotices(ns []notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.URL + " " + n.Type
	}
	slices.Sort(out)
	return out
}

func filter(ns []notice, url string) []notice {
	var out []notice
	for _, n := range ns {
		if n.URL == url {
			out = append(out, n)
		}
	}
	return out
}

func prometheusRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

// BenchmarkNotices: INDEXING_BENCH_JOBS new active jobs (default 200, as
// make test runs it; the recorded figure is 2 000), then every notice they
// owe read from the job_events log at the reader's position and sent to the
// fake API in batches of 100 (docs/benchmarks.md, "Index notices").
func BenchmarkNotices(b *testing.B) {
	jobs := 200
	if n, err := strconv.Atoi(os.Getenv("INDEXING_BENCH_JOBS")); err == nil && n > 0 {
		jobs = n
	}
	var read time.Duration // reading the log into notices, the rest is sending them
	for range b.N {
		b.StopTimer()
		e := openEnv(b)
		for i := range jobs {
			e.post(b, fmt.Sprintf("Notice host %d", i), jobbus.StatusActive)
		}
		r := e.relay(b, 1_000_000)
		b.StartTimer()
		start := time.Now()
		dispatchAll(b, r)
		read += time.Since(start)
		drain(b, r)
		b.StopTimer()
		if n := len(e.fake.received()); n != jobs {
			b.Fatalf("%d notices sent, want %d", n, jobs)
		}
	}
	b.ReportMetric(float64(jobs*b.N)/b.Elapsed().Seconds(), "notices/s")
	b.ReportMetric(read.Seconds()/float64(b.N), "s-reading/op")
}
