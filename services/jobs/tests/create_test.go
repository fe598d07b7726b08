package tests

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

func TestCreateStatusMatrix(t *testing.T) {
	t.Parallel()
	importer := identity.Identity{Kind: identity.KindLive, KeyID: 103, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	tests := []struct {
		name       string
		id         identity.Identity
		wantStatus string
		wantSpace  bool
	}{
		{"create201ProSpaceActive", liveKey(101, 10), "active", true},
		{"create201NonProSpaceDraft", liveKey(102, 11), "draft", true},
		{"create201UnconfirmedSpaceDraft", liveKey(104, 12), "draft", true},
		{"create201TrustedImporterActive", importer, "active", false},
		{"create201KeyWithoutSpaceDraft", liveKey(105, 0), "draft", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := jobBody("Matrix "+tc.name, 1)
			body["status"] = "active" // ignored
			cr := create(t, tc.id, body)
			if cr.Status != tc.wantStatus || cr.Action != "created" {
				t.Fatalf("status %q action %q, want %q created", cr.Status, cr.Action, tc.wantStatus)
			}
			if (cr.ViewURL != nil) != (tc.wantStatus == "active") {
				t.Fatalf("view_url %v for status %s", cr.ViewURL, cr.Status)
			}
			if cr.PaymentURL != nil || cr.PlanPrice != 0 || cr.ExpirationDays != 30 || cr.IsPaid {
				t.Fatalf("free plan expected: %+v", cr)
			}
			if !strings.Contains(cr.EditURL, "job="+cr.HashIdentifier) || !strings.Contains(cr.UnpublishURL, "job="+cr.HashIdentifier) {
				t.Fatalf("edit/unpublish urls lack the hash: %+v", cr)
			}
			if len(cr.DedupeHash) != 64 || cr.City.ID != 1 || cr.City.Name != "Berlin" {
				t.Fatalf("bad result: %+v", cr)
			}
			if !strings.HasSuffix(cr.PageURL, "-"+itoa(cr.JobID)) || strings.Contains(cr.PageURL, "/") {
				t.Fatalf("page_url %q is not a slug ending in the id", cr.PageURL)
			}
			var spaceID int64
			var spaceName *string
			if err := pool.QueryRow(bgContext, `SELECT space_id, space_name FROM jobs WHERE id = $1`, cr.JobID).Scan(&spaceID, &spaceName); err != nil {
				t.Fatal(err)
			}
			if spaceID != tc.id.SpaceID || (spaceName != nil) != tc.wantSpace {
				t.Fatalf("job space %d %v, key space %d", spaceID, spaceName, tc.id.SpaceID)
			}
		})
	}
}

func TestCreateNormalisation(t *testing.T) {
	t.Parallel()
	key := liveKey(110, 10)
	body := jobBody("Normalised Manager", 1)
	body["tags"] = " Community ,events,, COMMUNITY, Remote   Work ,"
	body["description"] = `<p onclick="x()">Hi <script>alert(1)</script><a href="javascript:alert(1)">bad</a> <a href="https://ok.example">ok</a></p><img src=x><style>p{}</style>`
	body["external_url"] = "https://Example.com/jobs/1?utm=x&ref=other#top"
	body["apply_url"] = "mailto:apply@example.com"
	body["inv_email"] = "not-an-email"
	body["currency"] = "usd"
	body["sal_min"] = 40000
	body["sal_max"] = 50000
	body["is_remote"] = 1
	cr := create(t, key, body)
	var tags, desc, ext, inv, cur string
	var remote bool
	var salMin, salMax int64
	if err := pool.QueryRow(bgContext, `SELECT tags, description, external_url, inv_email, currency, is_remote, sal_min, sal_max
		FROM jobs WHERE id = $1`, cr.JobID).Scan(&tags, &desc, &ext, &inv, &cur, &remote, &salMin, &salMax); err != nil {
		t.Fatal(err)
	}
	if tags != "community,events,remote work" {
		t.Errorf("tags %q", tags)
	}
	for _, bad := range []string{"script", "onclick", "javascript", "<img", "<style", "alert"} {
		if strings.Contains(desc, bad) {
			t.Errorf("description keeps %q: %s", bad, desc)
		}
	}
	if !strings.Contains(desc, `<a href="https://ok.example" rel="nofollow">ok</a>`) || !strings.HasPrefix(desc, "<p>") {
		t.Errorf("description lost allowed html: %s", desc)
	}
	if ext != "https://example.com/jobs/1?ref=coworkjobs&utm=x#top" {
		t.Errorf("external_url %q", ext)
	}
	if inv != defInv || cur != "USD" || !remote || salMin != 40000 || salMax != 50000 {
		t.Errorf("inv %q cur %q remote %v sal %d-%d", inv, cur, remote, salMin, salMax)
	}
	if cr.ApplyURL == nil || *cr.ApplyURL != "mailto:apply@example.com" {
		t.Errorf("apply_url %v", cr.ApplyURL)
	}
}

func TestCreateCityName(t *testing.T) {
	t.Parallel()
	key := liveKey(120, 10)
	tests := []struct {
		name     string
		cityName string
		wantID   int64
		detail   string
	}{
		{"create201ExactName", "berlin", 1, ""},
		{"create201ExactBeatsPrefix", "Bern", 2, ""},
		{"create201SinglePrefix", "Par", 3, ""},
		{"create422Ambiguous", "Ber", 0, `city_name "Ber" matches several cities: Bergen (id_city 5), Berlin (id_city 1), Bern (id_city 2); send id_city instead`},
		{"create422NoMatch", "Atlantis", 0, `city_name "Atlantis" matches no confirmed city`},
		{"create422UnconfirmedByName", "Hidden Town", 0, "matches no confirmed city"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := jobBody("City "+tc.name, 0)
			delete(body, "id_city")
			body["city_name"] = tc.cityName
			r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, body), &key)
			if tc.detail != "" {
				if r.Status != 422 || !r.hasDetail(tc.detail) {
					t.Fatalf("want 422 with %q, got %d %s", tc.detail, r.Status, r.Body)
				}
				return
			}
			if r.Status != 201 {
				t.Fatalf("got %d %s", r.Status, r.Body)
			}
			var cr createResult
			r.data(t, &cr)
			if cr.City.ID != tc.wantID {
				t.Fatalf("city %+v, want %d", cr.City, tc.wantID)
			}
		})
	}
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	key := liveKey(130, 10)
	long := strings.Repeat("x", 201)
	tests := []struct {
		name    string
		mutate  func(b map[string]any)
		raw     string
		status  int
		details []string
	}{
		{name: "create422EverythingMissing", raw: `{}`, status: 422, details: []string{
			"title is required", "company is required", "description is required", "job_type is required",
			"tags is required", "id_city or city_name is required"}},
		{name: "create422WrongTypesAllAtOnce", raw: `{"title":5,"company":true,"description":[],"job_type":"fulltime","tags":"a","id_city":"x","is_remote":"yes","sal_min":1.5}`,
			status: 422, details: []string{"title must be a string", "company must be a string", "description must be a string",
				"id_city must be an integer", "is_remote must be an integer", "sal_min must be an integer"}},
		{name: "create400NotJSON", raw: `{"title":`, status: 400},
		{name: "create400Array", raw: `[1]`, status: 400},
		{name: "create422TitleTooLong", mutate: func(b map[string]any) { b["title"] = long }, status: 422, details: []string{"title must be at most 200 characters"}},
		{name: "create422BlankTitle", mutate: func(b map[string]any) { b["title"] = "   " }, status: 422, details: []string{"title is required"}},
		{name: "create422JobType", mutate: func(b map[string]any) { b["job_type"] = "gig" }, status: 422, details: []string{"job_type must be one of fulltime, parttime, freelance, internship"}},
		{name: "create422EmptyTags", mutate: func(b map[string]any) { b["tags"] = " , ,," }, status: 422, details: []string{"tags must contain at least one non-empty tag"}},
		{name: "create422DescriptionOnlyScript", mutate: func(b map[string]any) { b["description"] = "<script>x</script>" }, status: 422, details: []string{"description has no text left"}},
		{name: "create422UnknownCity", mutate: func(b map[string]any) { b["id_city"] = 999 }, status: 422, details: []string{"id_city 999 is not a confirmed city"}},
		{name: "create422UnconfirmedCity", mutate: func(b map[string]any) { b["id_city"] = 4 }, status: 422, details: []string{"id_city 4 is not a confirmed city"}},
		{name: "create422ExternalURL", mutate: func(b map[string]any) { b["external_url"] = "javascript:alert(1)" }, status: 422, details: []string{"external_url must be an absolute http or https URL"}},
		{name: "create422ApplyURL", mutate: func(b map[string]any) { b["apply_url"] = "ftp://x" }, status: 422, details: []string{"apply_url must be an absolute http or https URL or a mailto: link"}},
		{name: "create422IsRemote", mutate: func(b map[string]any) { b["is_remote"] = 2 }, status: 422, details: []string{"is_remote must be 0 or 1"}},
		{name: "create422Currency", mutate: func(b map[string]any) { b["currency"] = "CHF" }, status: 422, details: []string{"currency must be one of EUR, USD, GBP"}},
		{name: "create422SalaryOrder", mutate: func(b map[string]any) { b["sal_min"] = 60000; b["sal_max"] = 50000 }, status: 422, details: []string{"sal_min must not exceed sal_max"}},
		{name: "create422NegativeSalary", mutate: func(b map[string]any) { b["sal_min"] = -1 }, status: 422, details: []string{"sal_min must be between 0 and"}},
		{name: "create422InactivePlan", mutate: func(b map[string]any) { b["id_plan"] = 4 }, status: 422, details: []string{"id_plan 4 is not an active plan"}},
		{name: "create422UnknownPlan", mutate: func(b map[string]any) { b["id_plan"] = 77 }, status: 422, details: []string{"id_plan 77 is not an active plan"}},
		{name: "create403SpaceConflict", mutate: func(b map[string]any) { b["id_space"] = 11 }, status: 403},
		{name: "create422SeveralRulesAtOnce", mutate: func(b map[string]any) {
			b["job_type"] = "x"
			b["currency"] = "x"
			b["id_city"] = 999
			b["id_plan"] = 4
		}, status: 422, details: []string{"job_type must be one of", "currency must be one of", "id_city 999", "id_plan 4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := tc.raw
			if body == "" {
				b := jobBody("Validation "+tc.name, 1)
				tc.mutate(b)
				body = jsonBody(t, b)
			}
			r := do(t, appFlat, "POST", "/v2/jobs", body, &key)
			if r.Status != tc.status || r.Env.Success || r.Env.Error == nil || r.Env.Status != tc.status {
				t.Fatalf("want %d, got %d %s", tc.status, r.Status, r.Body)
			}
			if tc.status == 422 && r.Env.Error.Message != "Validation failed" {
				t.Fatalf("message %q", r.Env.Error.Message)
			}
			for _, d := range tc.details {
				if !r.hasDetail(d) {
					t.Errorf("details %s lack %q", r.Env.Error.Details, d)
				}
			}
		})
	}
}

// Integer fields take JSON numbers only, as the document says: numeric text
// such as "5" or "0", which the service used to take, is a 422 naming the
// field (a client that validates against the document could never send it),
// while 1.0 and 4e4, integers to JSON Schema, are taken.
func TestCreateIntegersAreJSONNumbers(t *testing.T) {
	t.Parallel()
	key := liveKey(135, 10)
	for _, tc := range []struct{ field, value string }{
		{"id_city", `"1"`}, {"id_plan", `"5"`}, {"id_space", `"10"`}, {"sal_min", `"0"`}, {"sal_max", `"5"`},
		{"is_remote", `"0"`}, {"is_remote", `"1"`}, {"id_city", `" 1 "`},
	} {
		t.Run("create422String_"+tc.field+"_"+strings.Trim(tc.value, `" `), func(t *testing.T) {
			t.Parallel()
			b := jobBody("Strict "+tc.field, 1)
			delete(b, tc.field)
			body := strings.TrimSuffix(jsonBody(t, b), "}") + `,"` + tc.field + `":` + tc.value + `}`
			r := do(t, appFlat, "POST", "/v2/jobs", body, &key)
			want := tc.field + " must be an integer (a JSON number, not a string)"
			if r.Status != 422 || r.Env.Error == nil || r.Env.Error.Code != "validation_error" ||
				!slices.Equal(r.Env.Problems(t), []string{want}) {
				t.Fatalf("%s=%s: want 422 %q, got %d %s", tc.field, tc.value, want, r.Status, r.Body)
			}
		})
	}
	t.Run("create201IntegralNumbers", func(t *testing.T) {
		t.Parallel()
		b := jobBody("Integral numbers", 1)
		delete(b, "id_city")
		body := strings.TrimSuffix(jsonBody(t, b), "}") + `,"id_city":1.0,"sal_min":4e4,"sal_max":5.0e4,"id_plan":5.00,"is_remote":1}`
		r := do(t, appFlat, "POST", "/v2/jobs", body, &key)
		if r.Status != 201 {
			t.Fatalf("want 201, got %d %s", r.Status, r.Body)
		}
		var cr createResult
		r.data(t, &cr)
		var salMin, salMax int64
		if err := pool.QueryRow(bgContext, `SELECT sal_min, sal_max FROM jobs WHERE id = $1`, cr.JobID).Scan(&salMin, &salMax); err != nil {
			t.Fatal(err)
		}
		if cr.City.ID != 1 || salMin != 40000 || salMax != 50000 {
			t.Fatalf("city %d, salary %d-%d", cr.City.ID, salMin, salMax)
		}
	})
	t.Run("create422Fraction", func(t *testing.T) {
		t.Parallel()
		b := jobBody("Fraction", 1)
		b["id_plan"] = 5.5
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &key)
		if r.Status != 422 || !r.hasDetail("id_plan must be an integer") || r.hasDetail("not a string") {
			t.Fatalf("want 422 id_plan must be an integer, got %d %s", r.Status, r.Body)
		}
	})
}

func TestCreateIDSpaceAndPlans(t *testing.T) {
	t.Parallel()
	noSpace := liveKey(140, 0)
	importer := liveKey(142, 0)
	importer.TrustedImporter = true
	t.Run("create201IDSpaceForTrustedImporter", func(t *testing.T) {
		b := jobBody("Space by id", 1)
		b["id_space"] = 11
		cr := create(t, importer, b)
		var sid, owner int64
		_ = pool.QueryRow(bgContext, `SELECT space_id, owner_key_id FROM jobs WHERE id = $1`, cr.JobID).Scan(&sid, &owner)
		if sid != 11 || owner != importer.KeyID || cr.Status != "active" {
			t.Fatalf("space %d owner %d status %s", sid, owner, cr.Status)
		}
	})
	t.Run("create403IDSpaceForPlatformKey", func(t *testing.T) {
		b := jobBody("Space by platform", 1)
		b["id_space"] = 11
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &noSpace)
		if r.Status != 403 || !strings.Contains(string(r.Body), "trusted importer") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var n int
		if err := pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE title = 'Space by platform'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d jobs stored (%v)", n, err)
		}
	})
	t.Run("create422UnconfirmedIDSpace", func(t *testing.T) {
		b := jobBody("Space unconfirmed", 1)
		b["id_space"] = 12
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, b), &importer)
		if r.Status != 422 || !r.hasDetail("id_space 12 is not a confirmed space") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("create201OwnIDSpace", func(t *testing.T) {
		b := jobBody("Own space id", 1)
		b["id_space"] = 10
		if cr := create(t, liveKey(141, 10), b); cr.Status != "active" {
			t.Fatalf("status %s", cr.Status)
		}
	})
	t.Run("create201PaidPlanHasPaymentURL", func(t *testing.T) {
		b := jobBody("Paid plan", 1)
		b["id_plan"] = 6
		cr := create(t, liveKey(142, 11), b)
		if cr.PlanPrice != 49 || cr.ExpirationDays != 60 || cr.PaymentURL == nil || !strings.Contains(*cr.PaymentURL, cr.HashIdentifier) || cr.IsPaid {
			t.Fatalf("%+v", cr)
		}
	})
	t.Run("create401NoIdentity", func(t *testing.T) {
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, jobBody("x", 1)), nil)
		if r.Status != 401 || r.Env.Error.Code != "unauthorized" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("create403RestrictedKey", func(t *testing.T) {
		id := identity.Identity{Kind: identity.KindRestricted, KeyID: 143, SpaceID: 10}
		r := do(t, appFlat, "POST", "/v2/jobs", jsonBody(t, jobBody("x", 1)), &id)
		if r.Status != 403 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

func TestCreateDedupe(t *testing.T) {
	t.Parallel()
	key := liveKey(150, 10)
	first := create(t, key, jobBody("Dedupe Manager", 1))
	b := jobBody("  dedupe   MANAGER ", 1)
	b["company"] = "acme coworking"
	b["tags"] = "changed"
	second := create(t, key, b)
	if second.JobID != first.JobID || second.Action != "updated" || second.DedupeHash != first.DedupeHash {
		t.Fatalf("first %+v second %+v", first, second)
	}
	// Another space with the same content gets its own job.
	other := create(t, liveKey(151, 11), jobBody("Dedupe Manager", 1))
	if other.JobID == first.JobID || other.Action != "created" {
		t.Fatalf("other space reused the job: %+v", other)
	}

	t.Run("create201UpdateOfExpiredStaysExpired", func(t *testing.T) {
		cr := create(t, key, jobBody("Expired Dedupe", 1))
		r := do(t, appFlat, "POST", "/v2/jobs/unpublish", `{"job_id":`+itoa(cr.JobID)+`}`, &key)
		if r.Status != 200 {
			t.Fatalf("unpublish %d %s", r.Status, r.Body)
		}
		again := create(t, key, jobBody("Expired Dedupe", 1))
		if again.JobID != cr.JobID || again.Action != "updated" || again.Status != "expired" || again.ViewURL != nil {
			t.Fatalf("%+v", again)
		}
	})
	t.Run("create201UpdateOfPausedStaysPaused", func(t *testing.T) {
		cr := create(t, key, jobBody("Paused Dedupe", 1))
		if _, err := pool.Exec(bgContext, `UPDATE jobs SET status = 'paused' WHERE id = $1`, cr.JobID); err != nil {
			t.Fatal(err)
		}
		again := create(t, key, jobBody("Paused Dedupe", 1))
		if again.Status != "paused" || again.Action != "updated" {
			t.Fatalf("%+v", again)
		}
	})
}

// An unchanged resend (a platform re-posting its whole feed) is a match that
// writes nothing: same job, action updated, no new row version, updated_at
// and the expiry intents as they were; a real change is written as before.
func TestCreateDedupeUnchangedWritesNothing(t *testing.T) {
	t.Parallel()
	key := liveKey(152, 10)
	type state struct {
		xmin      string
		updatedAt time.Time
		intents   int
		status    string
		tags      string
	}
	read := func(jobID int64) state {
		t.Helper()
		var s state
		if err := pool.QueryRow(bgContext, `SELECT j.xmin::text, j.updated_at, j.status, j.tags,
			(SELECT count(*) FROM expiry_outbox o WHERE o.job_id = j.id) FROM jobs j WHERE j.id = $1`, jobID).
			Scan(&s.xmin, &s.updatedAt, &s.status, &s.tags, &s.intents); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := create(t, key, jobBody("Unchanged Resend", 1))
	before := read(first.JobID)

	again := create(t, key, jobBody("Unchanged Resend", 1))
	if again.JobID != first.JobID || again.Action != "updated" || again.Status != first.Status ||
		again.HashIdentifier != first.HashIdentifier || again.PageURL != first.PageURL || again.ViewURL == nil {
		t.Fatalf("first %+v\nagain %+v", first, again)
	}
	if after := read(first.JobID); after != before {
		t.Fatalf("an unchanged resend wrote the job: before %+v after %+v", before, after)
	}

	changed := jobBody("Unchanged Resend", 1)
	changed["tags"] = "community, events, hosting"
	upd := create(t, key, changed)
	after := read(first.JobID)
	if upd.JobID != first.JobID || upd.Action != "updated" || after.tags != "community,events,hosting" ||
		after.xmin == before.xmin || !after.updatedAt.After(before.updatedAt) || after.intents != before.intents+1 {
		t.Fatalf("a changed resend was not written: %+v before %+v after %+v", upd, before, after)
	}

	t.Run("create201DraftBecomesActiveWhenTheCallerNowQualifies", func(t *testing.T) {
		// Same space, content unchanged: only the status differs, and that is a change.
		draft := create(t, liveKey(153, 11), jobBody("Unchanged Draft", 1))
		importer := identity.Identity{Kind: identity.KindLive, KeyID: 154, SpaceID: 11, TrustedImporter: true, Scopes: []string{"write"}}
		promoted := create(t, importer, jobBody("Unchanged Draft", 1))
		if draft.Status != "draft" || promoted.JobID != draft.JobID || promoted.Status != "active" || promoted.Action != "updated" {
			t.Fatalf("draft %+v promoted %+v", draft, promoted)
		}
		if s := read(draft.JobID); s.status != "active" {
			t.Fatalf("stored %+v", s)
		}
	})
}

// A new active job commits with its expiry intent and its creation mail; a
// draft with its mail only; an update writes no second mail.
func TestCreateWritesOutboxIntents(t *testing.T) {
	t.Parallel()
	intents := func(jobID int64) (expiry, mail int) {
		t.Helper()
		var match bool
		if err := pool.QueryRow(bgContext, `SELECT count(*) FILTER (WHERE kind = 'expiry'),
			count(*) FILTER (WHERE kind = 'created_mail'), coalesce(bool_and(o.expires_at = j.expiration_date), true)
			FROM expiry_outbox o JOIN jobs j ON j.id = o.job_id WHERE o.job_id = $1`, jobID).Scan(&expiry, &mail, &match); err != nil {
			t.Fatal(err)
		}
		if !match {
			t.Fatal("an intent's date differs from the job's")
		}
		return expiry, mail
	}
	cr := create(t, liveKey(160, 10), jobBody("Outbox Writer", 1))
	if e, m := intents(cr.JobID); e != 1 || m != 1 {
		t.Fatalf("active job: %d expiry intents, %d mails", e, m)
	}
	draft := create(t, liveKey(161, 11), jobBody("Outbox Draft", 1))
	if e, m := intents(draft.JobID); e != 0 || m != 1 {
		t.Fatalf("draft: %d expiry intents, %d mails", e, m)
	}
	body := jobBody("Outbox Draft", 1)
	body["description"] = "<p>Changed.</p>"
	if up := create(t, liveKey(161, 11), body); up.Action != "updated" {
		t.Fatalf("%+v", up)
	}
	if _, m := intents(draft.JobID); m != 1 {
		t.Fatalf("an update wrote a second creation mail: %d", m)
	}
}

func TestCreate503DirectoryDown(t *testing.T) {
	t.Parallel()
	app := newApp(false, "http://127.0.0.1:1") // nothing listens there
	key := liveKey(170, 10)
	r := do(t, app, "POST", "/v2/jobs", jsonBody(t, jobBody("Directory Down", 1)), &key)
	if r.Status != 503 || r.Env.Error.Code != "service_unavailable" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var n int
	_ = pool.QueryRow(bgContext, `SELECT count(*) FROM jobs WHERE title = 'Directory Down'`).Scan(&n)
	if n != 0 {
		t.Fatal("a job was stored")
	}
}
