package tests

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
)

// jobDetail is the part of GET /v2/jobs/{id_job} the tests look at.
type jobDetail struct {
	IDJob          int64     `json:"id_job"`
	Title          string    `json:"title"`
	Description    string    `json:"description"`
	Status         string    `json:"status"`
	IsPaid         bool      `json:"is_paid"`
	PlanPrice      int       `json:"plan_price"`
	DateAdded      time.Time `json:"date_added"`
	ExpirationDate time.Time `json:"expiration_date"`
	Plan           struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	} `json:"plan"`
	ViewURL    *string `json:"view_url"`
	EditURL    *string `json:"edit_url"`
	PaymentURL *string `json:"payment_url"`
}

type transitionResult struct {
	JobID  int64  `json:"job_id"`
	Status string `json:"status"`
	Action string `json:"action"`
}

// conflict is a refused transition's answer.
type conflict struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details struct {
			Status     string  `json:"status"`
			Event      string  `json:"event"`
			PaymentURL *string `json:"payment_url"`
		} `json:"details"`
	} `json:"error"`
}

func getJob(t *testing.T, id identity.Identity, jobID int64) (resp, jobDetail) {
	t.Helper()
	r := do(t, appFlat, "GET", "/v2/jobs/"+itoa(jobID), "", &id)
	var d jobDetail
	if r.Status == 200 {
		r.data(t, &d)
	}
	return r, d
}

func transition(t *testing.T, id identity.Identity, event string, jobID int64) (resp, transitionResult, conflict) {
	t.Helper()
	r := do(t, appFlat, "POST", "/v2/jobs/"+event, `{"job_id":`+itoa(jobID)+`}`, &id)
	var res transitionResult
	var c conflict
	switch r.Status {
	case 200:
		r.data(t, &res)
	case 409:
		if err := json.Unmarshal(r.Body, &c); err != nil {
			t.Fatalf("409 body: %v %s", err, r.Body)
		}
	}
	return r, res, c
}

func outboxRows(t *testing.T, jobID int64) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(bgContext, `SELECT count(*) FROM expiry_outbox WHERE job_id = $1 AND kind = 'expiry'`, jobID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func listedIn(t *testing.T, key identity.Identity, city string) int {
	t.Helper()
	r := do(t, appFlat, "GET", "/v2/jobs?city="+city, "", &key)
	var d struct{ Total int }
	r.data(t, &d)
	return d.Total
}

// Who sees one job: an active job, any job reader (within its space when
// space-scoped); a space key its own space's jobs in every status and 403 for
// another space's; a key without a space also the jobs it created.
func TestGetJobVisibility(t *testing.T) {
	t.Parallel()
	draftOfSpace := create(t, liveKey(500, 2001), jobBody("Draft Of Space", 1500))
	activeOfPro := create(t, liveKey(501, 1001), jobBody("Active Of Pro", 1500))
	draftNoSpace := create(t, liveKey(502, 0), jobBody("Draft No Space", 1500))
	trusted := liveKey(503, 0)
	trusted.TrustedImporter = true
	activeNoSpace := create(t, trusted, jobBody("Active No Space", 1500))
	if draftOfSpace.Status != "draft" || activeOfPro.Status != "active" || draftNoSpace.Status != "draft" || activeNoSpace.Status != "active" {
		t.Fatalf("fixture statuses: %s %s %s %s", draftOfSpace.Status, activeOfPro.Status, draftNoSpace.Status, activeNoSpace.Status)
	}
	restricted := identity.Identity{Kind: identity.KindRestricted, KeyID: 504, Scopes: []string{"jobs:read"}}

	tests := []struct {
		name   string
		who    identity.Identity
		job    int64
		status int
		owner  bool
	}{
		{"spaceKeyOwnDraft", liveKey(505, 2001), draftOfSpace.JobID, 200, true},
		{"spaceKeyOtherSpaceDraft404", liveKey(506, 2002), draftOfSpace.JobID, 404, false},
		{"spaceKeyOtherSpaceActive403", liveKey(506, 2002), activeOfPro.JobID, 403, false},
		{"spaceKeyJobOfNoSpace404", liveKey(506, 2002), activeNoSpace.JobID, 404, false},
		{"creatorWithoutSpaceOwnDraft", liveKey(502, 0), draftNoSpace.JobID, 200, true},
		{"otherKeyWithoutSpaceDraft404", liveKey(507, 0), draftNoSpace.JobID, 404, false},
		{"otherKeyWithoutSpaceSpaceDraft404", liveKey(507, 0), draftOfSpace.JobID, 404, false},
		{"otherKeyWithoutSpaceActive", liveKey(507, 0), activeOfPro.JobID, 200, false},
		{"restrictedKeyActive", restricted, activeNoSpace.JobID, 200, false},
		{"restrictedKeyDraft404", restricted, draftNoSpace.JobID, 404, false},
		{"unknown404", liveKey(505, 2001), 999999999, 404, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, d := getJob(t, tc.who, tc.job)
			if r.Status != tc.status {
				t.Fatalf("want %d got %d %s", tc.status, r.Status, r.Body)
			}
			if r.Status != 200 {
				return
			}
			if d.IDJob != tc.job || d.Description == "" || d.Plan.ID != 5 || d.Plan.Name != "Free" {
				t.Fatalf("%+v", d)
			}
			if (d.EditURL != nil) != tc.owner {
				t.Fatalf("edit_url shown=%v, want %v: the edit capability is for the owner only", d.EditURL != nil, tc.owner)
			}
			if (d.ViewURL != nil) != (d.Status == "active") {
				t.Fatalf("view_url %v for a %s job", d.ViewURL, d.Status)
			}
		})
	}
	t.Run("descriptionIsTheSanitisedHTML", func(t *testing.T) {
		body := jobBody("Sanitised", 1500)
		body["description"] = `<p onclick="x()">Hello <script>alert(1)</script><a href="https://e.example">site</a></p>`
		cr := create(t, liveKey(501, 1001), body)
		_, d := getJob(t, liveKey(507, 0), cr.JobID)
		if d.Description != `<p>Hello <a href="https://e.example" rel="nofollow">site</a></p>` {
			t.Fatalf("description %q", d.Description)
		}
	})
	t.Run("badIDs", func(t *testing.T) {
		for path, want := range map[string]int{"/v2/jobs/0": 422, "/v2/jobs/abc": 404, "/v2/jobs/99999999999999999999": 404} {
			k := liveKey(507, 0)
			if r := do(t, appFlat, "GET", path, "", &k); r.Status != want {
				t.Errorf("%s: want %d got %d %s", path, want, r.Status, r.Body)
			}
		}
	})
}

// The transition matrix, walked on one job per path through the table, with
// the listing, the expiry clock and the expiry intents checked on the way.
func TestTransitions(t *testing.T) {
	t.Parallel()
	owner := liveKey(510, 2010) // a confirmed space that is not Pro: new jobs are drafts
	other := liveKey(511, 2011)
	cr := create(t, owner, jobBody("Lifecycle Walk", 1510))
	id := cr.JobID
	steps := []struct {
		event, status, action string // action "" means 409
	}{
		{"pause", "draft", ""},
		{"resume", "draft", ""},
		{"relist", "draft", ""},
		{"close", "draft", ""},
		{"publish", "active", "published"},
		{"publish", "active", "already_active"},
		{"resume", "active", "already_active"},
		{"relist", "active", "already_active"},
		{"pause", "paused", "paused"},
		{"pause", "paused", "already_paused"},
		{"publish", "paused", ""},
		{"relist", "paused", ""},
		{"resume", "active", "resumed"},
		{"close", "closed", "closed"},
		{"close", "closed", "already_closed"},
		{"publish", "closed", ""},
		{"resume", "closed", ""},
		{"relist", "closed", ""},
		{"pause", "closed", ""},
		{"unpublish", "closed", "already_unpublished"},
	}
	was := "draft"
	for i, s := range steps {
		// another space's key never gets past the ownership check: 403 for
		// a listed job, 404 for one it could not know exists
		want := 404
		if was == "active" {
			want = 403
		}
		if r, _, _ := transition(t, other, s.event, id); r.Status != want {
			t.Fatalf("step %d: %s by another space: want %d, got %d %s", i, s.event, want, r.Status, r.Body)
		}
		was = s.status
		before := outboxRows(t, id)
		r, res, c := transition(t, owner, s.event, id)
		if s.action == "" {
			if r.Status != 409 || c.Error.Code != "conflict" || c.Error.Details.Status != s.status ||
				c.Error.Details.Event != s.event || c.Error.Message == "" || c.Error.Details.PaymentURL != nil {
				t.Fatalf("step %d: %s on %s: want 409, got %d %s", i, s.event, s.status, r.Status, r.Body)
			}
			continue
		}
		if r.Status != 200 || res.Status != s.status || res.Action != s.action || res.JobID != id {
			t.Fatalf("step %d: %s: want %s/%s, got %d %s", i, s.event, s.status, s.action, r.Status, r.Body)
		}
		// publish and resume arm the expiry timer; nothing else does
		wantIntent := s.action == "published" || s.action == "resumed"
		if got := outboxRows(t, id) - before; got != map[bool]int{true: 1}[wantIntent] {
			t.Fatalf("step %d: %s wrote %d expiry intents", i, s.event, got)
		}
		if n := listedIn(t, owner, "city-1510"); n != map[bool]int{true: 1}[s.status == "active"] {
			t.Fatalf("step %d: %s job listed %d times", i, s.status, n)
		}
		if s.action == "paused" {
			// The job was paused a day ago: resuming moves the expiry by a day.
			if _, err := pool.Exec(bgContext, `UPDATE jobs SET paused_at = paused_at - interval '1 day' WHERE id = $1`, id); err != nil {
				t.Fatal(err)
			}
		}
		if s.action == "published" || s.action == "resumed" {
			_, d := getJob(t, owner, id)
			want := d.DateAdded.Add(30 * 24 * time.Hour)
			if s.action == "resumed" {
				want = want.Add(24 * time.Hour)
			}
			if diff := d.ExpirationDate.Sub(want); diff < -5*time.Second || diff > 5*time.Second {
				t.Fatalf("%s: expiration %s, want %s (date_added %s)", s.action, d.ExpirationDate, want, d.DateAdded)
			}
		}
	}

	t.Run("relistStartsANewPeriod", func(t *testing.T) {
		cr := create(t, owner, jobBody("Relist Me", 1511))
		if r, _, _ := transition(t, owner, "unpublish", cr.JobID); r.Status != 200 {
			t.Fatal(r.Status)
		}
		if _, err := pool.Exec(bgContext, `UPDATE jobs SET date_added = now() - interval '40 days',
			expiration_date = now() - interval '10 days' WHERE id = $1`, cr.JobID); err != nil {
			t.Fatal(err)
		}
		r, res, _ := transition(t, owner, "relist", cr.JobID)
		if r.Status != 200 || res.Action != "relisted" || res.Status != "active" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		_, d := getJob(t, owner, cr.JobID)
		if time.Since(d.DateAdded) > time.Minute || d.ExpirationDate.Sub(d.DateAdded) < 30*24*time.Hour-time.Second {
			t.Fatalf("relisted: date_added %s expiration %s", d.DateAdded, d.ExpirationDate)
		}
		if outboxRows(t, cr.JobID) != 1 || listedIn(t, owner, "city-1511") != 1 {
			t.Fatal("a relisted job is armed and listed")
		}
	})

	t.Run("ownership", func(t *testing.T) {
		listed := create(t, owner, jobBody("Listed Of Space", 1511))
		if r, _, _ := transition(t, owner, "publish", listed.JobID); r.Status != 200 {
			t.Fatalf("publish: %d %s", r.Status, r.Body)
		}
		for _, ev := range jobbus.RouteEvents {
			// 403 for a listed job, 404 for one the key could not know exists
			if r, _, _ := transition(t, liveKey(512, 0), string(ev), listed.JobID); r.Status != 403 {
				t.Errorf("%s by a key without a space on a space's listed job: %d", ev, r.Status)
			}
			if r, _, _ := transition(t, liveKey(512, 0), string(ev), id); r.Status != 404 {
				t.Errorf("%s by a key without a space on a space's unlisted job: %d", ev, r.Status)
			}
			if r, _, _ := transition(t, owner, string(ev), 999999999); r.Status != 404 {
				t.Errorf("%s of an unknown job: %d", ev, r.Status)
			}
			for _, body := range []string{`{}`, `{"job_id":"1"}`, `{"job_id":0}`} {
				if r := do(t, appFlat, "POST", "/v2/jobs/"+string(ev), body, &owner); r.Status != 422 {
					t.Errorf("%s %s: %d", ev, body, r.Status)
				}
			}
		}
	})

	t.Run("updateNeverRevivesAPausedJob", func(t *testing.T) {
		pro := liveKey(513, 1013)
		body := jobBody("Paused Then Updated", 1512)
		cr := create(t, pro, body)
		if r, res, _ := transition(t, pro, "pause", cr.JobID); r.Status != 200 || res.Action != "paused" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		body["description"] = "<p>New text for the same job.</p>"
		up := create(t, pro, body)
		if up.JobID != cr.JobID || up.Action != "updated" || up.Status != "paused" || up.ViewURL != nil {
			t.Fatalf("%+v", up)
		}
	})
}

// Concurrent calls of one transition on one job: exactly one does it.
func TestConcurrentTransitions(t *testing.T) {
	t.Parallel()
	owner := liveKey(520, 1020)
	cr := create(t, owner, jobBody("Concurrent Pause", 1520))
	const n = 12
	actions := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, res, _ := transition(t, owner, "pause", cr.JobID)
			actions[i] = res.Action
		}()
	}
	wg.Wait()
	paused := 0
	for _, a := range actions {
		switch a {
		case "paused":
			paused++
		case "already_paused":
		default:
			t.Fatalf("action %q", a)
		}
	}
	if paused != 1 {
		t.Fatalf("%d calls paused the job: %v", paused, actions)
	}
}

// A paid plan's job waits for its payment; the payment publishes it once, a
// replayed notification changes nothing, and a relisting needs a new one.
func TestPaidPlan(t *testing.T) {
	t.Parallel()
	bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: baseURL})
	owner := liveKey(530, 2030)
	body := jobBody("Featured Job", 1530)
	body["id_plan"] = 6
	cr := create(t, owner, body)
	if cr.Status != "draft" || cr.PaymentURL == nil || cr.PlanPrice != 49 || cr.IsPaid {
		t.Fatalf("%+v", cr)
	}
	r, _, c := transition(t, owner, "publish", cr.JobID)
	if r.Status != 409 || c.Error.Details.PaymentURL == nil || *c.Error.Details.PaymentURL != *cr.PaymentURL ||
		!strings.Contains(c.Error.Message, "payment_url") {
		t.Fatalf("publish before payment: %d %s", r.Status, r.Body)
	}
	_, d := getJob(t, owner, cr.JobID)
	if d.PaymentURL == nil || d.IsPaid || d.PlanPrice != 49 || d.Plan.Name != "Featured" {
		t.Fatalf("%+v", d)
	}

	pay := jobbus.Payment{JobID: cr.JobID, Provider: "test", Reference: "pay-" + itoa(cr.JobID), Amount: 4900, Currency: "EUR"}
	res, err := bus.Pay(bgContext, pay)
	if err != nil || res.Action != jobbus.ActionPublished || res.Status != "active" || !res.Job.IsPaid {
		t.Fatalf("pay: %+v %v", res, err)
	}
	res, err = bus.Pay(bgContext, pay)
	if err != nil || res.Action != jobbus.ActionReplayed || res.Status != "active" {
		t.Fatalf("replayed payment: %+v %v", res, err)
	}
	_, d = getJob(t, owner, cr.JobID)
	if !d.IsPaid || d.Status != "active" || d.PaymentURL != nil || d.ViewURL == nil {
		t.Fatalf("after payment: %+v", d)
	}
	var payments int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM payments WHERE job_id = $1`, cr.JobID).Scan(&payments)
	if payments != 1 {
		t.Fatalf("%d payments recorded", payments)
	}

	// Expired: relisting a paid plan needs a new payment, which relists it.
	if r, _, _ := transition(t, owner, "unpublish", cr.JobID); r.Status != 200 {
		t.Fatal(r.Status)
	}
	r, _, c = transition(t, owner, "relist", cr.JobID)
	if r.Status != 409 || c.Error.Details.PaymentURL == nil {
		t.Fatalf("relist before payment: %d %s", r.Status, r.Body)
	}
	pay.Reference += "-relist"
	res, err = bus.Pay(bgContext, pay)
	if err != nil || res.Action != jobbus.ActionRelisted || res.Status != "active" {
		t.Fatalf("relist payment: %+v %v", res, err)
	}

	t.Run("badPayments", func(t *testing.T) {
		var ve *validate.Error
		if _, err := bus.Pay(bgContext, jobbus.Payment{JobID: cr.JobID, Provider: "test"}); !errors.As(err, &ve) {
			t.Fatalf("payment without reference: %v", err)
		}
		if _, err := bus.Pay(bgContext, jobbus.Payment{JobID: 999999999, Provider: "test", Reference: "x"}); !errors.Is(err, jobbus.ErrNotFound) {
			t.Fatalf("payment of an unknown job: %v", err)
		}
	})
}
