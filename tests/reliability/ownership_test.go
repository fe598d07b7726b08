package reliability

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// jobOwner is who may change a job through the transition routes, as the
// tests model it: "space:N" for a space key's jobs, "key:NAME" for a key
// without a space.
type poster struct {
	name    string // the demo kind, or a key made for the test
	key     string
	space   int  // the key's space (0: none)
	trusted bool // a trusted importer
}

func (p poster) owner() string {
	if p.space != 0 {
		return fmt.Sprintf("space:%d", p.space)
	}
	return "key:" + p.name
}

// posters are every kind of key that may post: both spaces, the live
// platform key, the trusted importer, and two more keys without a space (one
// rate-limited, as operators hand out to small platforms).
func posters(t *testing.T) []poster {
	t.Helper()
	return []poster{
		{name: space1Key, key: key(t, space1Key), space: 1},
		{name: space2Key, key: key(t, space2Key), space: 2},
		{name: liveKey, key: key(t, liveKey)},
		{name: importerKey, key: key(t, importerKey), trusted: true},
		{name: "platform b", key: newKey(t, shared, "-scopes", "jobs:write,jobs:read")},
		{name: "limited platform", key: newKey(t, shared, "-scopes", "write", "-rate-limit", "100000")},
	}
}

// created is the part of a create answer that hands out control of a job.
type created struct {
	JobID          int64   `json:"job_id"`
	Action         string  `json:"action"`
	Status         string  `json:"status"`
	HashIdentifier string  `json:"hash_identifier"`
	EditURL        string  `json:"edit_url"`
	IsPaid         bool    `json:"is_paid"`
	PlanPrice      int     `json:"plan_price"`
	ExpirationDays int     `json:"expiration_days"`
	PaymentURL     *string `json:"payment_url"`
	Message        string  `json:"message"`
}

func post(t *testing.T, k string, body map[string]any) (reply, created) {
	t.Helper()
	raw, _ := json.Marshal(body)
	r := do(t, "POST", shared.URL["gateway"]+"/v2/jobs", string(raw), "X-API-Key", k)
	var c created
	if r.status == 201 {
		r.into(t, &c)
	}
	return r, c
}

func jobFields(title string) map[string]any {
	return map[string]any{"title": title, "company": "Victim Coworking", "description": "<p>owner text</p>",
		"job_type": "parttime", "tags": "x", "city_name": "Berlin", "inv_email": "owner@victim.example"}
}

func with(body map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range body {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// stored reads what a takeover would have changed.
func stored(t *testing.T, id int64) (desc, email, hash string) {
	t.Helper()
	if err := db.QueryRow(t.Context(), `SELECT description, inv_email, hash_identifier FROM jobs.jobs WHERE id = $1`, id).
		Scan(&desc, &email, &hash); err != nil {
		t.Fatalf("job %d: %v", id, err)
	}
	return desc, email, hash
}

// The takeover of the probe: a platform key re-posting a space's job (all of
// its fingerprint is public) with id_space, and without it.
func TestFingerprintTakeoverByPlatformKey(t *testing.T) {
	title := "Repro hijack " + randomSuffix()
	r, victim := post(t, key(t, space1Key), jobFields(title))
	if r.status != 201 || victim.Status != "active" {
		t.Fatalf("space 1's job: %s", r)
	}
	attack := with(jobFields(title), "description", "<p>attacker text</p>", "inv_email", "attacker@evil.example")

	r, _ = post(t, key(t, liveKey), with(attack, "id_space", 1))
	if r.status != 403 || r.code() != "forbidden" || !strings.Contains(r.env.Error.Message, "id_space") {
		t.Fatalf("live key posting into space 1: %s", r)
	}
	r, got := post(t, key(t, liveKey), attack)
	if r.status != 201 || got.Action != "created" || got.JobID == victim.JobID {
		t.Fatalf("live key re-posting space 1's job: want its own new job, got %s", r)
	}
	if strings.Contains(string(r.raw), victim.HashIdentifier) {
		t.Fatal("the answer carries the space's job's edit hash")
	}
	if desc, email, _ := stored(t, victim.JobID); !strings.Contains(desc, "owner text") || email != "owner@victim.example" {
		t.Fatalf("space 1's job changed: %q %q", desc, email)
	}
	// The owner's own re-post still updates its job.
	r, again := post(t, key(t, space1Key), with(jobFields(title), "description", "<p>owner text, v2</p>"))
	if r.status != 201 || again.Action != "updated" || again.JobID != victim.JobID {
		t.Fatalf("space 1 re-posting its job: %s", r)
	}
}

// Keys without a space each own their fingerprints: the live key, the
// trusted importer, a rate-limited key and the demo seeder cannot update one
// another's jobs.
func TestFingerprintBetweenKeysWithoutSpace(t *testing.T) {
	ps := posters(t)[2:]
	title := "Shared fingerprint " + randomSuffix()
	ids := map[int64]string{}
	for _, p := range ps {
		r, c := post(t, p.key, with(jobFields(title), "description", "<p>by "+p.name+"</p>"))
		if r.status != 201 || c.Action != "created" {
			t.Fatalf("%s: want its own new job, got %s", p.name, r)
		}
		if other, ok := ids[c.JobID]; ok {
			t.Fatalf("%s was handed %s's job %d", p.name, other, c.JobID)
		}
		ids[c.JobID] = p.name
	}
	for id, name := range ids {
		if desc, _, _ := stored(t, id); !strings.Contains(desc, "by "+name) {
			t.Fatalf("%s's job %d was overwritten: %q", name, id, desc)
		}
	}

	// A seeded job without a space, re-posted as it reads by each key.
	var sTitle, sCompany, sExt, sDesc string
	var sCity, sID int64
	if err := db.QueryRow(t.Context(), `SELECT id, title, company, city_id, external_url, description FROM jobs.jobs
		WHERE space_id = 0 AND key_id = 0 ORDER BY id LIMIT 1`).Scan(&sID, &sTitle, &sCompany, &sCity, &sExt, &sDesc); err != nil {
		t.Fatalf("a seeded job without a space: %v", err)
	}
	ext := strings.Replace(strings.Replace(sExt, "?ref=coworkjobs", "", 1), "&ref=coworkjobs", "", 1)
	for _, p := range ps {
		r, c := post(t, p.key, map[string]any{"title": sTitle, "company": sCompany, "description": "<p>taken</p>",
			"job_type": "fulltime", "tags": "x", "id_city": sCity, "external_url": ext})
		if r.status != 201 || c.JobID == sID {
			t.Fatalf("%s re-posting seeded job %d: %s", p.name, sID, r)
		}
	}
	if desc, _, _ := stored(t, sID); desc != sDesc {
		t.Fatalf("seeded job %d changed: %q", sID, desc)
	}
}

// A paid plan applies only when paid: a non-Pro space's live free job
// re-posted with a paid plan keeps its plan, and the answer says so.
func TestPlanUpgradeNeedsPayment(t *testing.T) {
	gw, k := shared.URL["gateway"], key(t, space2Key)
	title := "Plan upgrade " + randomSuffix()
	r, c := post(t, k, jobFields(title))
	if r.status != 201 || c.Status != "draft" {
		t.Fatalf("non-Pro create: %s", r)
	}
	if r := do(t, "POST", gw+"/v2/jobs/publish", fmt.Sprintf(`{"job_id":%d}`, c.JobID), "X-API-Key", k); r.status != 200 {
		t.Fatalf("publish the free draft: %s", r)
	}
	r, up := post(t, k, with(jobFields(title), "id_plan", 6))
	if r.status != 201 || up.Action != "updated" || up.JobID != c.JobID {
		t.Fatalf("re-post with a paid plan: %s", r)
	}
	if up.Status != "active" || up.PlanPrice != 0 || up.ExpirationDays != 30 || up.IsPaid || up.PaymentURL != nil ||
		!strings.Contains(up.Message, "plan stays") {
		t.Fatalf("an active unpaid job took the paid plan, or the answer hides it: %+v", up)
	}
	var plan int
	var paid bool
	if err := db.QueryRow(t.Context(), `SELECT plan_id, is_paid FROM jobs.jobs WHERE id = $1`, c.JobID).Scan(&plan, &paid); err != nil || plan != 5 || paid {
		t.Fatalf("stored plan %d paid %v (%v)", plan, paid, err)
	}

	// A draft takes the plan, and waits for its payment.
	title = "Plan draft " + randomSuffix()
	if r, d := post(t, k, jobFields(title)); r.status != 201 || d.Status != "draft" {
		t.Fatalf("draft: %s", r)
	}
	r, d := post(t, k, with(jobFields(title), "id_plan", 6))
	if r.status != 201 || d.Status != "draft" || d.PlanPrice != 49 || d.ExpirationDays != 60 || d.IsPaid || d.PaymentURL == nil {
		t.Fatalf("a draft re-posted with a paid plan: %s", r)
	}
	// Without id_plan an update keeps the plan it has.
	r, d = post(t, k, with(jobFields(title), "description", "<p>typo fixed</p>"))
	if r.status != 201 || d.PlanPrice != 49 {
		t.Fatalf("an update without id_plan changed the plan: %s", r)
	}
}

// A key learns nothing of jobs it could not know exist: another space's
// draft answers as an unknown id does, on reads and on transitions.
func TestNoOracleForOtherSpacesDrafts(t *testing.T) {
	gw := shared.URL["gateway"]
	_, draft := post(t, key(t, space2Key), jobFields("Hidden draft "+randomSuffix()))
	if draft.Status != "draft" {
		t.Fatalf("space 2's job is %s", draft.Status)
	}
	listed := spaceJob(t, gw, 2, jobFields("Listed "+randomSuffix()))
	k := key(t, space1Key)
	for _, c := range []struct {
		id   int64
		want int
	}{{draft.JobID, 404}, {1 << 40, 404}, {listed, 403}} {
		if r := do(t, "GET", fmt.Sprintf("%s/v2/jobs/%d", gw, c.id), "", "X-API-Key", k); r.status != c.want {
			t.Fatalf("GET job %d with space 1's key: want %d, got %s", c.id, c.want, r)
		}
		for _, ev := range []string{"pause", "unpublish", "publish"} {
			r := do(t, "POST", gw+"/v2/jobs/"+ev, fmt.Sprintf(`{"job_id":%d}`, c.id), "X-API-Key", k)
			if r.status != c.want {
				t.Fatalf("%s job %d with space 1's key: want %d, got %s", ev, c.id, c.want, r)
			}
		}
	}
}

// One-line fields refuse what is not text.
func TestControlCharactersRefused(t *testing.T) {
	k := key(t, space1Key)
	for field, v := range map[string]string{"title": "Bell \a ringer", "company": "Esc \x1b[31mape", "tags": "a,\bb",
		"city_name": "Ber\x7flin", "title ": "Reversed \u202egnp.exe"} {
		field = strings.TrimSpace(field)
		r, _ := post(t, k, with(jobFields("Control "+randomSuffix()), field, v))
		if r.status != 422 || !strings.Contains(string(r.raw), field+" must not contain") {
			t.Fatalf("%s %q: %s", field, v, r)
		}
	}
	// White space is collapsed, as before.
	if r, _ := post(t, k, with(jobFields("Tab\tand\nnewline "+randomSuffix()))); r.status != 201 {
		t.Fatalf("white space: %s", r)
	}
}

// A create body must be declared as JSON in UTF-8.
func TestCreateNeedsJSONMediaType(t *testing.T) {
	gw, k := shared.URL["gateway"], key(t, space1Key)
	body := []byte(jobBody("Media " + randomSuffix()))
	for _, ct := range []string{"text/plain", "", "application/json; charset=utf-16", "application/x-www-form-urlencoded", "application/json;;"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", gw+"/v2/jobs", strings.NewReader(string(body)))
		req.Header.Set("X-API-Key", k)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		r := readReply(client.Do(req))
		if r.status != 415 || r.code() != "unsupported_media_type" || r.envelopeProblem() != "" {
			t.Fatalf("Content-Type %q: %s", ct, r)
		}
	}
	r := do(t, "POST", gw+"/v2/jobs", string(body), "X-API-Key", k, "Content-Type", "application/json; charset=UTF-8")
	if r.status != 201 {
		t.Fatalf("JSON in UTF-8: %s", r)
	}
}

var hiddenCSRF = regexp.MustCompile(`<form method="post" action="/jobs/edit"[^>]*>\s*<input type="hidden" name="_csrf" value="([^"]+)"`)

// Editing a job on its page moves its fingerprint: a later post of the new
// title updates it, one of the old title creates a new job.
func TestEditMovesFingerprint(t *testing.T) {
	gw, k := shared.URL["gateway"], key(t, space1Key)
	old := "Before edit " + randomSuffix()
	_, c := post(t, k, jobFields(old))
	u, err := url.Parse(c.EditURL)
	if err != nil || c.HashIdentifier == "" {
		t.Fatalf("edit_url %q", c.EditURL)
	}
	page := send("GET", gw+"/jobs/edit?"+u.RawQuery, nil)
	m := hiddenCSRF.FindSubmatch(page.raw)
	if page.status != 200 || m == nil {
		t.Fatalf("edit page: %d, no edit form", page.status)
	}
	renamed := "After edit " + randomSuffix()
	form := url.Values{"_csrf": {string(m[1])}, "job": {c.HashIdentifier}, "title": {renamed}, "company": {"Victim Coworking"},
		"description": {"<p>owner text</p>"}, "job_type": {"parttime"}, "tags": {"x"}, "currency": {"EUR"}}
	hdr := []string{"Content-Type", "application/x-www-form-urlencoded"}
	for _, ck := range page.header.Values("Set-Cookie") {
		hdr = append(hdr, "Cookie", strings.SplitN(ck, ";", 2)[0])
	}
	// The client follows the page's 303 back to the form.
	if r := send("POST", gw+"/jobs/edit", []byte(form.Encode()), hdr...); r.status != 200 {
		t.Fatalf("edit: %s", r)
	}
	var title string
	if err := db.QueryRow(t.Context(), `SELECT title FROM jobs.jobs WHERE id = $1`, c.JobID).Scan(&title); err != nil || title != renamed {
		t.Fatalf("edit not saved: %q %v", title, err)
	}
	if r, again := post(t, k, jobFields(renamed)); r.status != 201 || again.Action != "updated" || again.JobID != c.JobID {
		t.Fatalf("post of the new title: want job %d updated, got %s", c.JobID, r)
	}
	if r, fresh := post(t, k, jobFields(old)); r.status != 201 || fresh.Action != "created" || fresh.JobID == c.JobID {
		t.Fatalf("post of the old title: want a new job, got %s", r)
	}
}

// The property: random keys posting random fingerprints, concurrently, with
// and without id_space, are only ever answered "updated" with a job they
// may change through the transition routes, and only ever handed links of
// such a job; afterwards every job holds content its owner wrote.
func TestOwnershipProperty(t *testing.T) {
	gw := shared.URL["gateway"]
	ps := posters(t)
	run := randomSuffix()
	titles := []string{"Host", "Community Manager", "Barista"}
	companies := []string{"Victim Coworking", "Acme"}
	cities := []string{"Berlin", "Lisbon"}

	var mu sync.Mutex
	owner := map[int64]string{}  // job → who may change it (poster.owner)
	hashes := map[string]int64{} // edit hash → job
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(i), 42))
			for n := range 40 {
				body := map[string]any{"title": titles[rnd.IntN(len(titles))] + " " + run, "company": companies[rnd.IntN(len(companies))],
					"description": fmt.Sprintf("<p>written by %s #%d</p>", p.owner(), n), "job_type": "parttime", "tags": "prop",
					"city_name": cities[rnd.IntN(len(cities))]}
				space := 0
				if rnd.IntN(3) == 0 {
					space = 1 + rnd.IntN(2)
					body["id_space"] = space
				}
				raw, _ := json.Marshal(body)
				r := send("POST", gw+"/v2/jobs", raw, "X-API-Key", p.key)
				who := p.owner()
				switch {
				case r.err != nil:
					errs <- r.String()
					return
				case space != 0 && (p.space != 0 && space != p.space || p.space == 0 && !p.trusted):
					if r.status != 403 {
						errs <- fmt.Sprintf("%s with id_space %d: %s", p.name, space, r)
						return
					}
					continue
				case r.status != 201:
					errs <- fmt.Sprintf("%s: %s", p.name, r)
					return
				}
				var c created
				if err := jsonInto(r, &c); err != nil {
					errs <- err.Error()
					return
				}
				mu.Lock()
				prev, seen := owner[c.JobID]
				if !seen {
					owner[c.JobID] = who
				}
				if h, ok := hashes[c.HashIdentifier]; ok && h != c.JobID {
					prev, seen = "another job's hash", true
				}
				hashes[c.HashIdentifier] = c.JobID
				mu.Unlock()
				if seen && prev != who {
					errs <- fmt.Sprintf("%s was answered %s with job %d of %s", p.name, c.Action, c.JobID, prev)
					return
				}
				// Whatever it was handed, it may change through the routes: the
				// job's own links are sent only to a key that may.
				g := send("GET", fmt.Sprintf("%s/v2/jobs/%d", gw, c.JobID), nil, "X-API-Key", p.key)
				var d struct {
					EditURL string `json:"edit_url"`
				}
				if g.status != 200 || jsonInto(g, &d) != nil || d.EditURL != c.EditURL {
					errs <- fmt.Sprintf("%s was handed job %d it may not change: %s", p.name, c.JobID, g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if len(owner) < len(ps) {
		t.Fatalf("only %d jobs written: the property was not exercised", len(owner))
	}
	// Every job's content was last written by its owner.
	for id, who := range owner {
		if desc, _, _ := stored(t, id); !strings.Contains(desc, "written by "+who+" #") {
			t.Errorf("job %d of %s holds %q", id, who, desc)
		}
	}
}
