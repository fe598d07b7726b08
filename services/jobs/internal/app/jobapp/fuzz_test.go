package jobapp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// canonical decodes body as create does and returns the bytes create hashes
// into the idempotency request hash.
func canonical(t *testing.T, body []byte) ([]byte, createRequest, error) {
	t.Helper()
	var req createRequest
	if err := web.DecodeJSONBytes(body, &req); err != nil {
		return nil, req, err
	}
	out, err := req.MarshalJSON()
	if err != nil {
		t.Fatalf("canonical form of an accepted body %q: %v", body, err)
	}
	return out, req, nil
}

// FuzzCreateRequest decodes POST /v2/jobs bodies the way create does.
// Properties: a body is refused only with 400 bad_request or 422
// validation_error; the canonical form behind the Idempotency-Key request
// hash ignores white space (an exact retry re-indented by another client
// library still replays), and is itself stable; every type problem names a
// field and says what it must be; a JSON string field arrives unchanged.
func FuzzCreateRequest(f *testing.F) {
	for _, s := range []string{
		`{"title":"Community Manager","company":"Acme","description":"<p>x</p>","job_type":"fulltime","tags":"a,b","id_city":1}`,
		`{"title":1,"company":true,"description":[],"job_type":{},"tags":null,"id_city":"12","is_remote":true}`,
		`{"id_city":"  7 ","sal_min":1e3,"sal_max":-1,"id_plan":9223372036854775808,"is_remote":"1"}`,
		`{"title":"a","title":"b","TITLE":"c","status":"active"}`,
		"{\"title\":\"\xff\"}", `{"title":"\ud83d"}`, `{"tags":"` + strings.Repeat("x,", 300) + `"}`,
		`{"description":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, `[]`, ``, `{"a":1}{}`,
	} {
		f.Add([]byte(s))
	}
	fields := []string{"title", "company", "description", "job_type", "tags", "id_city", "city_name", "external_url",
		"apply_url", "is_remote", "inv_email", "currency", "sal_min", "sal_max", "id_space", "id_plan"}
	f.Fuzz(func(t *testing.T, body []byte) {
		canon, req, err := canonical(t, body)
		if err != nil {
			if e, ok := web.AsError(err); !ok || (e.Status != 400 && e.Status != 422) {
				t.Fatalf("%q refused with %v", body, err)
			}
			return
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, bytes.TrimSpace(body), "\t ", "  "); err != nil {
			t.Fatalf("accepted body does not indent: %v", err)
		}
		again, _, err := canonical(t, indented.Bytes())
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("re-indented body hashes differently (%v):\n%s\n%s", err, canon, again)
		}
		if twice, _, err := canonical(t, canon); err != nil || !bytes.Equal(twice, canon) {
			t.Fatalf("canonical form is not stable (%v):\n%s\n%s", err, canon, twice)
		}
		in := req.toInput()
		for _, p := range in.TypeProblems {
			if strings.HasPrefix(p, "unknown field ") || strings.HasSuffix(p, " more unknown fields") {
				continue
			}
			name, rest, _ := strings.Cut(p, " ")
			if !contains(fields, name) || !strings.HasPrefix(rest, "must be ") {
				t.Fatalf("type problem %q does not name a field and its type", p)
			}
		}
		var s string
		title := req.JSON("title")
		if string(bytes.TrimSpace(title)) != "null" && json.Unmarshal(title, &s) == nil && (in.Title == nil || *in.Title != s) {
			t.Fatalf("title %s arrived as %v", title, in.Title)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// FuzzListQuery runs GET /v2/jobs query strings through the real identity
// middleware and parseListQuery. Properties: a bad value is a 422 with every
// problem listed, never silently dropped; an accepted filter only holds
// values the SQL layer expects (search text 3-200 characters of valid UTF-8,
// lowercase; a known job type; a slug; page bounds); and the filter always
// carries the key's own space, whatever the query says.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{
		"", "q=manager&job_type=fulltime&remote=1&city=berlin", "q=ab", "q=%ff%fe%fd", "q=" + strings.Repeat("x", 201),
		"remote=yes", "city=Berlin", "city=a--b", "page=0&per_page=51", "page=-1", "page=99999999999999999999",
		"per_page=1e3", "q=%00abc", "city=berlin&city=paris", "space_id=2&sid=2", "q=%E2%80%AEabc", "job_type=FULLTIME",
		"q=++++abc++++", "&&&=&=", "q=%zz",
	} {
		f.Add(s, true, int64(7))
		f.Add(s, false, int64(0))
	}
	codec, err := identity.NewCodec(strings.Repeat("k", 32))
	if err != nil {
		f.Fatal(err)
	}
	type parsed struct {
		f             jobbus.ListFilter
		page, perPage int
		err           error
		ran           bool
	}
	var got parsed
	app := fiber.New(fiber.Config{ErrorHandler: func(*fiber.Ctx, error) error { return nil }})
	paginated := &handlers{cfg: Config{PaginationEnabled: true}}
	streamed := &handlers{cfg: Config{}}
	app.Get("/v2/jobs", codec.Middleware(), func(c *fiber.Ctx) error {
		h := streamed
		if c.Get("X-Paginated") == "1" {
			h = paginated
		}
		got.f, got.page, got.perPage, got.err = h.parseListQuery(c)
		got.ran = true
		return nil
	})
	serve := app.Handler()
	f.Fuzz(func(t *testing.T, query string, pagination bool, spaceID int64) {
		if strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) {
			return // cannot reach a server in a request line; clients percent-encode these
		}
		if spaceID < 0 {
			spaceID = -spaceID
		}
		tok, err := codec.Sign(identity.Identity{Kind: identity.KindLive, KeyID: 1, SpaceID: spaceID}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var rc fasthttp.RequestCtx
		rc.Request.SetRequestURI("/v2/jobs?" + query)
		rc.Request.Header.Set(identity.Header, tok)
		if pagination {
			rc.Request.Header.Set("X-Paginated", "1")
		}
		got = parsed{}
		serve(&rc)
		lf := got.f
		if got.err != nil {
			e, ok := web.AsError(got.err)
			details, _ := e.Details.([]string)
			if !ok || e.Status != 422 || len(details) == 0 {
				t.Fatalf("%q refused with %v", query, got.err)
			}
			return
		}
		if !got.ran {
			t.Fatalf("%q: never reached the handler: %d %s", query, rc.Response.StatusCode(), rc.Response.Body())
		}
		if lf.SpaceID != spaceID {
			t.Fatalf("%q: filter space %d, key space %d", query, lf.SpaceID, spaceID)
		}
		if s := lf.Search; !s.Empty() {
			if s.Terms() > jobbus.MaxSearchTerms || len(s.Words) != len(s.Prefix) || len(s.Words) != len(s.Fuzz) {
				t.Fatalf("%q: accepted search %+v", query, s)
			}
			for _, w := range append(append(append([]string{}, s.Words...), s.Phrases...), s.Excluded...) {
				if w == "" || !utf8.ValidString(w) || w != strings.ToLower(w) {
					t.Fatalf("%q: accepted search term %q", query, w)
				}
			}
		}
		if lf.Sort != jobbus.SortNewest && lf.Sort != jobbus.SortRelevance {
			t.Fatalf("%q: sort %q", query, lf.Sort)
		}
		if lf.SalaryMin != nil && (lf.Currency == "" || *lf.SalaryMin < 0) {
			t.Fatalf("%q: salary_min %d without a currency", query, *lf.SalaryMin)
		}
		if lf.JobType != "" && !jobbus.ValidJobType(lf.JobType) {
			t.Fatalf("%q: accepted job type %q", query, lf.JobType)
		}
		if lf.CitySlug != "" && (len(lf.CitySlug) > 100 || !slugRE.MatchString(lf.CitySlug)) {
			t.Fatalf("%q: accepted city %q", query, lf.CitySlug)
		}
		if !pagination {
			if lf.Limit != 0 || lf.Offset != 0 {
				t.Fatalf("%q: unpaginated list got limit %d offset %d", query, lf.Limit, lf.Offset)
			}
			return
		}
		if got.page < 1 || got.page > MaxPage || got.perPage < 1 || got.perPage > MaxPerPage ||
			lf.Limit != got.perPage || lf.Offset != (got.page-1)*got.perPage {
			t.Fatalf("%q: page %d per_page %d limit %d offset %d", query, got.page, got.perPage, lf.Limit, lf.Offset)
		}
	})
}

// legacyCreateRequest is the struct create decoded bodies into before it
// read them field by field; its JSON encoding was the canonical form.
type legacyCreateRequest struct {
	Title       json.RawMessage `json:"title,omitempty"`
	Company     json.RawMessage `json:"company,omitempty"`
	Description json.RawMessage `json:"description,omitempty"`
	JobType     json.RawMessage `json:"job_type,omitempty"`
	Tags        json.RawMessage `json:"tags,omitempty"`
	IDCity      json.RawMessage `json:"id_city,omitempty"`
	CityName    json.RawMessage `json:"city_name,omitempty"`
	ExternalURL json.RawMessage `json:"external_url,omitempty"`
	ApplyURL    json.RawMessage `json:"apply_url,omitempty"`
	IsRemote    json.RawMessage `json:"is_remote,omitempty"`
	InvEmail    json.RawMessage `json:"inv_email,omitempty"`
	Currency    json.RawMessage `json:"currency,omitempty"`
	SalMin      json.RawMessage `json:"sal_min,omitempty"`
	SalMax      json.RawMessage `json:"sal_max,omitempty"`
	IDSpace     json.RawMessage `json:"id_space,omitempty"`
	IDPlan      json.RawMessage `json:"id_plan,omitempty"`
}

// The canonical form behind the Idempotency-Key request hash is what it was
// before bodies were read field by field: a key stored before an upgrade
// still replays the same body after it, rather than answering 422 for a
// different body.
func TestCanonicalFormUnchanged(t *testing.T) {
	for _, body := range []string{
		`{"title":"Community Manager","company":"Acme","description":"<p>x & y</p>","job_type":"fulltime","tags":"a,b","id_city":1}`,
		`{ "tags" : "z" , "title" : "T",
		   "sal_min": 1e3, "sal_max": 50000.0, "is_remote": true, "inv_email": null, "status": "active" }`,
		`{"id_city":"  7 ","id_plan":9223372036854775808,"is_remote":"1","currency":"eur","apply_url":"mailto:a@b.example"}`,
		`{"title":"a","title":"b","description":"\u003cp\u003e é \u2028","external_url":"https://e.example/?a=1&b=<2>"}`,
		`{"company":{"nested":[1,2,{"x":null}]},"city_name":["Berlin"],"id_space":-1}`,
		`{}`,
	} {
		got, _, err := canonical(t, []byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var old legacyCreateRequest
		if err := json.Unmarshal([]byte(body), &old); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("canonical form of %s:\n%s\nwant\n%s", body, got, want)
		}
	}
}
