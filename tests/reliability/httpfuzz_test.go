package reliability

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// route is one line of GET /v2's route table.
type route struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Auth   string `json:"auth"`
	Write  bool   `json:"write"`
}

// routes reads the route table the gateway serves, so that a new route is
// covered (or, for a POST, fails the test until it has a valid body below).
func routes(t *testing.T, gw string) []route {
	t.Helper()
	var info struct {
		Routes []route `json:"routes"`
	}
	do(t, "GET", gw+"/v2", "").into(t, &info)
	if len(info.Routes) < 10 {
		t.Fatalf("route table has %d routes", len(info.Routes))
	}
	return info.Routes
}

// validBodies are accepted bodies of each POST route; the hostile cases are
// mutations of them that must all be refused. Fields whose wrong value the
// spec says is replaced rather than refused (inv_email) are left out.
var validBodies = map[string]map[string]any{
	"/v2/jobs": {"title": "Fuzzed Manager", "company": "Fuzz", "description": "<p>x</p>", "job_type": "fulltime",
		"tags": "a,b", "city_name": "Berlin", "external_url": "https://e.example/j", "apply_url": "https://e.example/a",
		"is_remote": 1, "currency": "EUR", "sal_min": 1, "sal_max": 2, "id_plan": 5},
	"/v2/jobs/batch": {"mode": "upsert", "jobs": []any{map[string]any{"external_ref": "fuzz-1", "title": "Fuzzed Manager", "company": "Fuzz",
		"description": "<p>x</p>", "job_type": "fulltime", "tags": "a,b", "city_name": "Berlin"}}},
	"/v2/jobs/unpublish": {"job_id": 999999999},
	"/v2/jobs/publish":   {"job_id": 999999999},
	"/v2/jobs/pause":     {"job_id": 999999999},
	"/v2/jobs/resume":    {"job_id": 999999999},
	"/v2/jobs/relist":    {"job_id": 999999999},
	"/v2/jobs/close":     {"job_id": 999999999},
	// Unsigned: refused before it is read as an event.
	"/v2/payments/stripe/webhook":         {"id": "evt_fuzz", "type": "checkout.session.completed", "data": map[string]any{"object": map[string]any{"id": "cs_fuzz"}}},
	"/v2/feedback":                        {"message": "hello", "email": "fuzz@example.org", "url": "https://e.example/", "category": "bug"},
	"/v2/newsletters/subscribe":           {"email": "fuzz@example.org", "name": "Fuzz", "source": "test", "consent": true},
	"/v2/newsletters/confirm":             {"token": "not-a-token"},
	"/v2/newsletters/unsubscribe":         {"token": "not-a-token"},
	"/v2/alerts":                          {"email": "fuzz@example.org", "city": "berlin", "q": "barista", "frequency": "daily"},
	"/v2/alerts/confirm":                  {"token": "not-a-token"},
	"/v2/alerts/manage":                   {"token": "not-a-token", "paused": true},
	"/v2/alerts/unsubscribe":              {"token": "not-a-token"},
	"/v2/privacy/erase":                   {"token": "not-a-token"},
	"/v2/keys":                            {"name": "fuzzed key", "scopes": []string{"jobs:read"}, "restricted": true, "rate_limit_per_minute": 10},
	"/v2/keys/{id}/rotate":                {"grace_seconds": 60},
	"/v2/webhooks":                        {"url": "https://hooks.example/fuzz", "events": []string{"job.published"}, "description": "fuzz"},
	"/v2/webhooks/{id_webhook}/recover":   {"since": "2026-11-30T00:00:00Z"},
	"/v2/import/sources":                  {"kind": "json", "url": "https://feeds.example/fuzz.json", "interval_minutes": 60, "company": "Fuzz"},
	"/v2/import/sources/{id_source}/sync": {},
	// These take no body: whatever is sent, the unknown id is a 4xx.
	"/v2/webhooks/{id_webhook}/rotate-secret":                      {},
	"/v2/webhooks/{id_webhook}/ping":                               {},
	"/v2/webhooks/{id_webhook}/deliveries/{id_delivery}/redeliver": {},
}

// webhookPath is Stripe's webhook: no key, a signature instead.
const webhookPath = "/v2/payments/stripe/webhook"

// concrete fills a route's path parameters ({id_job}) with a value that
// names nothing.
func concrete(path string) string {
	for {
		i := strings.IndexByte(path, '{')
		j := strings.IndexByte(path, '}')
		if i < 0 || j < i {
			return path
		}
		path = path[:i] + "999999999" + path[j+1:]
	}
}

// hostile is one request that must be answered with a 4xx envelope.
type hostile struct {
	name   string
	body   []byte
	ctype  string
	hdr    []string
	status int // 0: any 4xx
}

func marshal(m map[string]any, field string, v any) []byte {
	c := make(map[string]any, len(m))
	for k, x := range m {
		c[k] = x
	}
	if field != "" {
		c[field] = v
	}
	b, _ := json.Marshal(c)
	return b
}

// withRaw replaces field's value in the JSON of m with raw bytes (which may
// be invalid JSON or invalid UTF-8).
func withRaw(m map[string]any, field string, raw string) []byte {
	b := marshal(m, field, "\x00MARK\x00")
	return bytes.Replace(b, []byte(`"\u0000MARK\u0000"`), []byte(raw), 1)
}

// hostileBodies mutates a valid body every way the issue lists: malformed
// JSON, wrong types, huge strings, deep nesting, bad UTF-8, NUL, duplicate
// keys, other top-level values, odd content types and encodings.
func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

func hostileBodies(valid map[string]any) []hostile {
	ok := marshal(valid, "", nil)
	var out []hostile
	for i, b := range []string{``, ` `, `{`, `{"a":`, `{a:1}`, `{"a":1,}`, `{'a':1}`, `{"a":NaN}`, `{"a":01}`,
		`[]`, `"x"`, `1`, `null`, `true`, `{}{}`, string(ok) + `x`, string(ok) + string(ok), "\ufeff" + string(ok),
		`{"a":"\x`, `{"a":"\u12"}`} {
		out = append(out, hostile{name: fmt.Sprintf("malformed%d", i), body: []byte(b)})
	}
	fields := make([]string, 0, len(valid))
	for f := range valid {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		for j, v := range []string{`true`, `[]`, `{}`, `1.5`, `-1e400`, `[[["x"]]]`, `{"$ne":1}`} {
			if (f == "is_remote" && v == "true") || (f == "consent" && v == "true") || (f == "restricted" && v == "true") || (f == "paused" && v == "true") {
				continue // accepted forms of those fields
			}
			if f == "jobs" && v == `[[["x"]]]` {
				continue // a batch's row that is not a job is that row's error (200), never the batch's
			}
			out = append(out, hostile{name: fmt.Sprintf("wrongType-%s-%d", f, j), body: withRaw(valid, f, v), status: 422})
		}
		if _, isString := valid[f].(string); isString {
			out = append(out,
				hostile{name: "hugeString-" + f, body: marshal(valid, f, strings.Repeat("a", 900_000)), status: 422},
				hostile{name: "nul-" + f, body: marshal(valid, f, "a\x00b"), status: 400},
				hostile{name: "badUTF8-" + f, body: withRaw(valid, f, "\"\xff\xfe\xc3\""), status: 400},
				hostile{name: "duplicateKey-" + f, body: append(bytes.TrimSuffix(ok, []byte("}")), []byte(`,"`+f+`":[]}`)...), status: 422},
			)
		}
		out = append(out, hostile{name: "deepNesting-" + f, body: withRaw(valid, f, strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), status: 400})
	}
	out = append(out,
		hostile{name: "tooLarge", body: marshal(valid, firstOr(fields, "x"), strings.Repeat("a", 1_100_000)), status: 413},
		hostile{name: "formNotJSON", body: []byte("title=x&message=%ff"), ctype: "text/plain"},
		hostile{name: "xml", body: []byte(`<job><title>x</title></job>`), ctype: "application/xml"},
		hostile{name: "utf16", body: utf16(string(ok)), ctype: "application/json; charset=utf-16"},
		hostile{name: "brokenMultipart", body: []byte("--X\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nhi"), ctype: "multipart/form-data; boundary=Y"},
		hostile{name: "gzipBody", body: gzipped(ok), ctype: "application/json", hdr: []string{"Content-Encoding", "gzip"}, status: 415},
		hostile{name: "gzipBomb", body: gzipped(bytes.Repeat([]byte(" "), 64<<20)), ctype: "application/json", hdr: []string{"Content-Encoding", "gzip, gzip"}, status: 415},
	)
	return out
}

func utf16(s string) []byte {
	out := []byte{0xfe, 0xff}
	for _, r := range s {
		out = append(out, byte(r>>8), byte(r))
	}
	return out
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// rowCounts counts the rows of every table of every service schema.
func rowCounts(t *testing.T) map[string]int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT table_schema || '.' || table_name FROM information_schema.tables
		WHERE table_schema IN ('jobs', 'directory', 'content', 'community', 'gateway') AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 8 {
		t.Fatalf("found only tables %v", tables)
	}
	out := map[string]int{}
	for _, tb := range tables {
		if countsTraffic[tb] {
			continue
		}
		out[tb] = count(t, db, "SELECT count(*) FROM "+tb)
	}
	return out
}

// countsTraffic are the tables every request may add to by design: job
// statistics count the views, impressions and clicks of any client, hostile
// ones too (as crawlers or unknown agents, apart); nothing else is written.
var countsTraffic = map[string]bool{"jobs.stats_events": true, "jobs.stats_daily": true, "jobs.stats_visitors": true}

// rawHead is the request line and headers of a request with a body.
func rawHead(method, path string, n int, hdr ...string) string {
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: gw\r\n")
	for i := 0; i+1 < len(hdr); i += 2 {
		b.WriteString(hdr[i] + ": " + hdr[i+1] + "\r\n")
	}
	b.WriteString("Content-Length: " + strconv.Itoa(n) + "\r\n\r\n")
	return b.String()
}

// isDocument reports whether a request description names a document route,
// whose successful answer is the document itself: the OpenAPI document, the
// reference page, and the reach's XML, text and script outside /v2.
func isDocument(what string) bool {
	for _, p := range []string{" /v2/openapi.json ", " /v2/openapi.yaml ", " /v2/docs ", " /robots.txt ", " /sitemap.xml ",
		" /feeds/jobs.xml ", " /embed/jobs.js "} {
		if strings.Contains(what+" ", p) {
			return true
		}
	}
	return false
}

// Hostile input at every route through the gateway: never a 500, always the
// envelope, every hostile body refused with a 4xx, and not one row stored.
func TestHostileInputEveryRoute(t *testing.T) {
	gw := shared.URL["gateway"]
	// keys:manage too, so that the key API reads the hostile bodies.
	k := newKey(t, shared, "-scopes", "write,keys:manage,webhooks:manage", "-trusted-importer")
	before := rowCounts(t)
	table := routes(t, gw)
	sent := 0
	check := func(t *testing.T, what string, r reply, want int) {
		t.Helper()
		sent++
		if r.err == nil && r.status < 400 && isDocument(what) {
			return // the OpenAPI document and the reference page are not envelopes
		}
		if p := r.envelopeProblem(); p != "" {
			t.Errorf("%s: %s: %s", what, p, r)
			return
		}
		switch {
		case r.status >= 500:
			t.Errorf("%s: %s", what, r)
		case want == 0 && (r.status < 400 || r.status > 499):
			t.Errorf("%s: want a 4xx, got %s", what, r)
		case want > 0 && r.status != want:
			t.Errorf("%s: want %d, got %s", what, want, r)
		}
	}
	for _, rt := range table {
		url := gw + concrete(rt.Path)
		auth := []string{}
		if rt.Auth == "key" { // public and optional_key routes are fuzzed without one
			auth = []string{"X-API-Key", k}
		}
		switch rt.Method {
		case "POST":
			valid, ok := validBodies[rt.Path]
			if !ok {
				t.Errorf("POST %s has no valid body in validBodies: add one so it is fuzzed", rt.Path)
				continue
			}
			for _, h := range hostileBodies(valid) {
				hdr := append(append([]string{}, auth...), h.hdr...)
				ctype := h.ctype
				if ctype == "" {
					ctype = "application/json"
				}
				hdr = append(hdr, "Content-Type", ctype)
				r := send("POST", url, h.body, hdr...)
				if len(h.body) > 1<<20 {
					// The server answers 413 and closes before reading it all,
					// which Go's client reports as a broken pipe: send it raw.
					r = exchange(hostPort(gw), rawHead("POST", rt.Path, len(h.body), hdr...), h.body)
				}
				want := h.status
				if len(valid) == 0 && want != 413 && want != 415 {
					want = 0 // a route without a body: any 4xx
				}
				if rt.Path == webhookPath && want != 413 && want != 415 {
					// The gateway's body checks first, then the signature,
					// before the body is read as an event.
					want = 400
				}
				check(t, "POST "+rt.Path+" "+h.name, r, want)
			}
			for _, h := range []struct {
				name string
				hdr  []string
			}{
				{"idempotencyKeyBadUTF8", []string{"Idempotency-Key", "k\xff\xfe"}},
				{"idempotencyKeyTooLong", []string{"Idempotency-Key", strings.Repeat("k", 201)}},
			} {
				if rt.Path != "/v2/jobs" {
					continue
				}
				body := marshal(validBodies[rt.Path], "title", "Odd header "+h.name)
				check(t, "POST "+rt.Path+" "+h.name, send("POST", url, body, append(append([]string{}, auth...), h.hdr...)...), 0)
			}
		case "GET":
			for i, q := range []string{"q=%ff%fe", "q=%00", "page=-1&per_page=1e9&limit=-5&offset=x", "city=%2e%2e%2f",
				"search=" + strings.Repeat("x", 4000), "slug=..%2F..%2Fetc%2Fpasswd", "from=2026-13-45&to=x", "space=-1",
				"%zz=1", "q=a&q=b&search=a&search=b", "api_key=svc_live_x&api_key=y", "token=%00"} {
				r := send("GET", url+"?"+q, nil, auth...)
				check(t, fmt.Sprintf("GET %s query %d", rt.Path, i), r, -1)
			}
		}
		// Odd headers on every route (valid otherwise): never a 500.
		for i, hdr := range [][]string{
			{"Accept", "application/xml"}, {"Accept-Encoding", "x-unknown;q=2"}, {"If-None-Match", `W/"` + strings.Repeat("x", 2000)},
			{"X-Request-ID", "bad id\twith junk"}, {"Range", "bytes=0-1"}, {"Expect", "100-continue"},
			{"Content-Type", "application/json; charset=\"unterminated"}, {"Origin", "https://evil.example"},
			{"Traceparent", "00-zzzz-yyyy-01"}, {"X-Forwarded-For", "1.2.3.4, not-an-ip"}, {"Host", "evil.example"},
		} {
			r := send(rt.Method, url, nil, append(append([]string{}, auth...), hdr...)...)
			check(t, fmt.Sprintf("%s %s header %d", rt.Method, rt.Path, i), r, -1)
		}
		// Keys: garbage, wrong scheme, too long, a revoked shape (a route's
		// optional key too: sent, it must be valid).
		if rt.Auth != "public" {
			for i, hdr := range [][]string{
				{"X-API-Key", "svc_live_" + strings.Repeat("A", 40)}, {"X-API-Key", "\xff\xfe"}, {"X-API-Key", strings.Repeat("k", 3000)},
				{"Authorization", "Basic dXNlcjpwYXNz"}, {"Authorization", "Bearer"}, {"Authorization", "Bearer  " + k + " extra"},
			} {
				r := send(rt.Method, url, nil, hdr...)
				check(t, fmt.Sprintf("%s %s bad key %d", rt.Method, rt.Path, i), r, 401)
			}
		}
	}
	// Odd methods on every path: 405 with Allow, or 404.
	seen := map[string]bool{}
	routed := map[string]bool{} // "METHOD path" of the table
	for _, rt := range table {
		routed[rt.Method+" "+rt.Path] = true
	}
	for _, rt := range table {
		if seen[rt.Path] {
			continue
		}
		seen[rt.Path] = true
		for _, m := range []string{"PUT", "DELETE", "PATCH", "PROPFIND", "FOO"} {
			if routed[m+" "+rt.Path] {
				continue
			}
			r := send(m, gw+concrete(rt.Path), []byte(`{}`), "X-API-Key", k)
			check(t, m+" "+rt.Path, r, 405)
			if r.status == 405 && r.header.Get("Allow") == "" {
				t.Errorf("%s %s: 405 without Allow", m, rt.Path)
			}
		}
	}
	for _, p := range []string{"/v2/jobs/", "/v2/JOBS", "/v2/jobs/../cities", "/v2/%2e%2e/v2/jobs", "/v2/jobs%00", "/v3/jobs", "/"} {
		check(t, "GET "+p, send("GET", gw+p, nil, "X-API-Key", k), 0)
	}
	after := rowCounts(t)
	for tb, n := range before {
		if after[tb] != n {
			t.Errorf("%s: %d rows before the hostile requests, %d after", tb, n, after[tb])
		}
	}
	t.Logf("%d hostile requests over %d routes; row counts unchanged in %d tables", sent, len(table), len(before))

	// The valid bodies themselves are accepted: what the hostile cases
	// changed is what got them refused.
	for path, want := range map[string]int{"/v2/jobs": 201, "/v2/feedback": 201, "/v2/newsletters/subscribe": 202, "/v2/jobs/unpublish": 404} {
		r := send("POST", gw+path, marshal(validBodies[path], "", nil), "X-API-Key", k)
		if r.status != want {
			t.Errorf("valid body of POST %s: want %d, got %s", path, want, r)
		}
	}
}
