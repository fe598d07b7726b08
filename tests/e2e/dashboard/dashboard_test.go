package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// browserLike is a client with a cookie jar that does not follow redirects,
// sending the Origin a browser sends with its forms.
type browserLike struct {
	t      *testing.T
	c      *http.Client
	origin string
}

func newClient(t *testing.T) *browserLike {
	jar, _ := cookiejar.New(nil)
	return &browserLike{t: t, origin: sys.URL["gateway"], c: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browserLike) get(path string) page {
	b.t.Helper()
	resp, err := b.c.Get(sys.URL["gateway"] + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func (b *browserLike) post(path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, sys.URL["gateway"]+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.origin)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(b.t, resp)
}

func read(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrf is the token of the page's forms.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

// ownerOf is the address of a role of a space in the demo data.
func ownerOf(t *testing.T, space int64, role string) string {
	t.Helper()
	var email string
	if err := db.QueryRow(context.Background(), `SELECT email FROM directory.space_admins WHERE space_id = $1 AND role = $2 LIMIT 1`,
		space, role).Scan(&email); err != nil {
		t.Fatalf("space %d %s: %v", space, role, err)
	}
	return email
}

// addAdmin gives a fresh address a role in a space.
func addAdmin(t *testing.T, space int64, role string) string {
	t.Helper()
	email := role + "-" + suite.RandomHex(4) + "@space.example"
	if _, err := db.Exec(context.Background(), `INSERT INTO directory.space_admins (space_id, email, role) VALUES ($1, $2, $3)`,
		space, email, role); err != nil {
		t.Fatal(err)
	}
	return email
}

var linkRE = regexp.MustCompile(`http://\S+/dashboard/sign-in/link\?token=[A-Za-z0-9_-]+`)

// mailedLinks waits for n sign-in mails to addr and returns their links.
func mailedLinks(t *testing.T, addr string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := mailcatcher.For(mailDir, addr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= n {
			var links []string
			for _, m := range got {
				l := linkRE.FindString(m.Text)
				if l == "" {
					t.Fatalf("no link in the mail:\n%s", m.Text)
				}
				links = append(links, l)
			}
			return links
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d mails to %s, want %d", len(got), addr, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// signIn asks for a link for email, follows it from the mail and uses it.
func signIn(t *testing.T, email string) *browserLike {
	t.Helper()
	b := newClient(t)
	before, _ := mailcatcher.For(mailDir, email)
	form := b.get("/dashboard")
	if p := b.post("/dashboard/sign-in", url.Values{"email": {email}, "_csrf": {form.csrf(t)}}); p.status != 200 {
		t.Fatalf("sign-in request: %d %s", p.status, p.body)
	}
	links := mailedLinks(t, email, len(before)+1)
	link := links[len(links)-1]
	confirm := b.get(strings.TrimPrefix(link, sys.URL["gateway"]))
	if confirm.status != 200 || !strings.Contains(html.UnescapeString(confirm.body), email) {
		t.Fatalf("link page: %d %s", confirm.status, confirm.body)
	}
	u, _ := url.Parse(link)
	p := b.post("/dashboard/sign-in/link", url.Values{"token": {u.Query().Get("token")}, "_csrf": {confirm.csrf(t)}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/dashboard" {
		t.Fatalf("sign in: %d %s", p.status, p.body)
	}
	return b
}

// Asking for a link says the same, at the same cost, for a known and an
// unknown address; only the known one gets a mail.
func TestSignInDoesNotTellWhoIsKnown(t *testing.T) {
	known, unknown := addAdmin(t, 1, "admin"), "nobody-"+suite.RandomHex(4)+"@elsewhere.example"
	var bodies []string
	for _, email := range []string{known, unknown} {
		b := newClient(t)
		form := b.get("/dashboard")
		if csp := form.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || form.header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("headers: %v", form.header)
		}
		p := b.post("/dashboard/sign-in", url.Values{"email": {email}, "_csrf": {form.csrf(t)}})
		if p.status != 200 {
			t.Fatalf("%s: %d %s", email, p.status, p.body)
		}
		bodies = append(bodies, p.body)
	}
	if bodies[0] != bodies[1] {
		t.Errorf("the answers differ:\n%s\n---\n%s", bodies[0], bodies[1])
	}
	// Both requests wrote a link (the same work); the relay mails the known one only.
	var n int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM gateway.dashboard_sign_ins WHERE email = ANY($1)`,
		[]string{known, unknown}).Scan(&n); err != nil || n != 2 {
		t.Errorf("sign-ins stored: %d %v", n, err)
	}
	mailedLinks(t, known, 1)
	waitOutboxEmpty(t)
	if got, _ := mailcatcher.For(mailDir, unknown); len(got) != 0 {
		t.Errorf("an unknown address got %d mails", len(got))
	}
	// Neither the database nor the logs hold a usable link.
	link := mailedLinks(t, known, 1)[0]
	token := link[strings.Index(link, "token=")+6:]
	var leaked bool
	if err := db.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM gateway.dashboard_sign_ins
		WHERE encode(nonce, 'escape') LIKE '%' || $1 || '%' OR encode(token_hash, 'base64') LIKE '%' || $1 || '%')`, token).Scan(&leaked); err != nil || leaked {
		t.Errorf("the token is stored: %v %v", leaked, err)
	}
	if strings.Contains(sys.Log("gateway"), token) {
		t.Error("the gateway's log holds a sign-in token")
	}
}

func waitOutboxEmpty(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM gateway.dashboard_mail_outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sign-in mails still in the outbox", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A link signs in once, within its lifetime; a forged, replayed or expired
// one opens no session and says why.
func TestSignInLinkIsSingleUseAndExpires(t *testing.T) {
	email := addAdmin(t, 1, "owner")
	b := signIn(t, email)
	home := b.get("/dashboard")
	if home.status != 200 || !strings.Contains(home.body, "/dashboard/spaces/1") {
		t.Fatalf("home after sign-in: %d %s", home.status, home.body)
	}
	links := mailedLinks(t, email, 1)
	token := links[0][strings.Index(links[0], "token=")+6:]

	// Replayed, from another browser.
	other := newClient(t)
	if p := other.get("/dashboard/sign-in/link?token=" + token); p.status != http.StatusGone || !strings.Contains(p.body, "already used") {
		t.Errorf("used link page: %d %s", p.status, p.body)
	}
	pre := other.get("/dashboard").csrf(t)
	if p := other.post("/dashboard/sign-in/link", url.Values{"token": {token}, "_csrf": {pre}}); p.status != http.StatusGone {
		t.Errorf("used link posted: %d", p.status)
	}
	if p := other.get("/dashboard"); !strings.Contains(p.body, "Send me a sign-in link") {
		t.Error("a replayed link signed in")
	}
	// Forged.
	forged := strings.Repeat("A", 43)
	if p := other.get("/dashboard/sign-in/link?token=" + forged); p.status != http.StatusNotFound || !strings.Contains(p.body, "not valid") {
		t.Errorf("forged link: %d %s", p.status, p.body)
	}
	if p := other.get("/dashboard/sign-in/link?token=short"); p.status != http.StatusNotFound {
		t.Errorf("short token: %d", p.status)
	}
	// Expired: a fresh link whose 15 minutes have passed.
	email2 := addAdmin(t, 1, "admin")
	c := newClient(t)
	c.post("/dashboard/sign-in", url.Values{"email": {email2}, "_csrf": {c.get("/dashboard").csrf(t)}})
	link := mailedLinks(t, email2, 1)[0]
	if _, err := db.Exec(context.Background(), `UPDATE gateway.dashboard_sign_ins SET expires_at = now() - interval '1 second' WHERE email = $1`, email2); err != nil {
		t.Fatal(err)
	}
	if p := c.get(strings.TrimPrefix(link, sys.URL["gateway"])); p.status != http.StatusGone || !strings.Contains(p.body, "expired") {
		t.Errorf("expired link: %d %s", p.status, p.body)
	}
	// Signing out ends the session; its cookie opens nothing afterwards.
	if p := b.post("/dashboard/sign-out", url.Values{"_csrf": {home.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Errorf("sign out: %d %s", p.status, p.body)
	}
	if p := b.get("/dashboard/spaces/1"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d", p.status)
	}
}

// Issue 44's reproduction: nobody can lock an owner out. Fifty requests for
// the owner's address from fifty other clients make one mail, whose link
// works; the owner asking again within DASHBOARD_LINK_RESEND_EVERY sends
// nothing new (the link is in the inbox), and later it is that same link
// that is mailed again, not a new one; each client has its own budget.
func TestSignInCannotLockTheOwnerOut(t *testing.T) {
	email := addAdmin(t, 2, "owner")
	ask := func(client string) {
		t.Helper()
		b := newClient(t)
		form := b.get("/dashboard")
		if p := b.post("/dashboard/sign-in", url.Values{"email": {email}, "_csrf": {form.csrf(t)}}, "X-Forwarded-For", client); p.status != 200 ||
			!strings.Contains(p.body, "on its way") && !strings.Contains(p.body, "sign-in link") {
			t.Fatalf("request from %s: %d %s", client, p.status, p.body)
		}
	}
	for i := range 50 {
		ask(fmt.Sprintf("198.51.100.%d", i+1))
	}
	links := mailedLinks(t, email, 1)
	waitOutboxEmpty(t)
	// The owner, from their own address, asks too.
	ask("203.0.113.7")
	waitOutboxEmpty(t)
	if got, _ := mailcatcher.For(mailDir, email); len(got) != 1 {
		t.Fatalf("%d mails after 51 requests within minutes, want 1", len(got))
	}
	// Minutes later, asking mails the same link again.
	if _, err := db.Exec(context.Background(), `UPDATE gateway.dashboard_sign_ins SET mailed_at = mailed_at - interval '3 minutes'
		WHERE email = $1`, email); err != nil {
		t.Fatal(err)
	}
	ask("203.0.113.7")
	again := mailedLinks(t, email, 2)
	if again[1] != links[0] {
		t.Fatalf("a new link was minted (%s), not the outstanding one resent", again[1])
	}
	// The link works for the owner.
	b := newClient(t)
	confirm := b.get(strings.TrimPrefix(links[0], sys.URL["gateway"]))
	u, _ := url.Parse(links[0])
	if p := b.post("/dashboard/sign-in/link", url.Values{"token": {u.Query().Get("token")}, "_csrf": {confirm.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("the owner's sign-in after 50 foreign requests: %d %s", p.status, p.body)
	}
	// Each client's budget is its own: the fifty spent one each.
	var most int
	if err := db.QueryRow(context.Background(), `SELECT max(n) FROM (SELECT count(*) AS n FROM gateway.dashboard_sign_in_requests
		WHERE email = $1 GROUP BY client_ip) c`, email).Scan(&most); err != nil || most != 2 {
		t.Fatalf("requests per client: at most %d (%v), want 2 (the owner's)", most, err)
	}
	var stored int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM gateway.dashboard_sign_ins WHERE email = $1`, email).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("%d links stored (%v), want 1", stored, err)
	}
}

// A stolen session cookie does nothing from a form without the session's
// token, nor from another site's page; a form posted before sign-in needs
// the browser's own token.
func TestDashboardFormsRefuseCSRF(t *testing.T) {
	b := signIn(t, addAdmin(t, 1, "owner"))
	space := b.get("/dashboard/spaces/1")
	token := space.csrf(t)
	for _, tc := range []struct {
		form url.Values
		hdr  []string
	}{
		{url.Values{"name": {"x"}, "scopes": {"jobs:read"}}, nil},
		{url.Values{"name": {"x"}, "scopes": {"jobs:read"}, "_csrf": {"forged"}}, nil},
		{url.Values{"name": {"x"}, "scopes": {"jobs:read"}, "_csrf": {token}}, []string{"Origin", "https://evil.example"}},
		{url.Values{"name": {"x"}, "scopes": {"jobs:read"}, "_csrf": {token}}, []string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}},
	} {
		if p := b.post("/dashboard/spaces/1/keys", tc.form, tc.hdr...); p.status != http.StatusForbidden {
			t.Errorf("%v %v: %d", tc.form, tc.hdr, p.status)
		}
	}
	if p := b.get("/dashboard/spaces/1"); strings.Contains(p.body, `<td>x</td>`) {
		t.Error("a refused form created a key")
	}
	// Before sign-in: the token must be this browser's.
	c := newClient(t)
	c.get("/dashboard")
	if p := c.post("/dashboard/sign-in", url.Values{"email": {"a@b.example"}, "_csrf": {"not-mine"}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without the browser's token: %d", p.status)
	}
}

// Keys are for owners and admins of Pro spaces; editors and non-Pro spaces
// see why, and their posts are refused. A space the user does not
// administer is a 404.
func TestDashboardRolesAndPro(t *testing.T) {
	editor := signIn(t, addAdmin(t, 1, "editor"))
	p := editor.get("/dashboard/spaces/1")
	if p.status != 200 || strings.Contains(p.body, "Create a key") {
		t.Errorf("editor's space page shows keys: %d", p.status)
	}
	if r := editor.post("/dashboard/spaces/1/keys", url.Values{"name": {"e"}, "scopes": {"jobs:read"}, "_csrf": {p.csrf(t)}}); r.status != http.StatusForbidden {
		t.Errorf("editor creates a key: %d %s", r.status, r.body)
	}
	nonPro := signIn(t, addAdmin(t, 2, "owner"))
	p = nonPro.get("/dashboard/spaces/2")
	if p.status != 200 || !strings.Contains(p.body, "part of Pro") || strings.Contains(p.body, "Create a key") {
		t.Errorf("non-Pro space page: %d %s", p.status, p.body)
	}
	if r := nonPro.post("/dashboard/spaces/2/keys", url.Values{"name": {"e"}, "scopes": {"jobs:read"}, "_csrf": {p.csrf(t)}}); r.status != http.StatusForbidden {
		t.Errorf("non-Pro creates a key: %d", r.status)
	}
	if r := nonPro.get("/dashboard/spaces/1"); r.status != http.StatusNotFound {
		t.Errorf("another space's page: %d", r.status)
	}
	if r := nonPro.post("/dashboard/spaces/1/jobs/1/pause", url.Values{"_csrf": {p.csrf(t)}}); r.status != http.StatusNotFound {
		t.Errorf("another space's job: %d", r.status)
	}
}

func apiCall(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, sys.URL["gateway"]+path, strings.NewReader(body))
	req.Header.Set("X-API-Key", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data map[string]any `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Data
}

var keyRE = regexp.MustCompile(`value="(svc_(?:live|rstr)_[0-9A-Za-z]{40})"`)

// The whole loop over HTTP: an owner pauses a job of the space, creates a
// key (shown once), the key works against the API, the owner revokes it and
// the API refuses it; the audit log says the dashboard user did it.
func TestDashboardJobsAndKeys(t *testing.T) {
	owner := ownerOf(t, 1, "owner")
	b := signIn(t, owner)
	pro := sys.Keys["space 1 (Pro) key"]
	status, job := apiCall(t, "POST", "/v2/jobs", pro, fmt.Sprintf(`{"title":"Dashboard Host %s","company":"Factory",
		"description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin","inv_email":"p@agency.example"}`, suite.RandomHex(3)))
	if status != 201 {
		t.Fatalf("create job: %d %v", status, job)
	}
	jobID := int64(job["job_id"].(float64))
	space := b.get("/dashboard/spaces/1")
	row := fmt.Sprintf(`id="job-%d"`, jobID)
	if !strings.Contains(space.body, row) || !strings.Contains(space.body, fmt.Sprintf("/jobs/%d/pause", jobID)) {
		t.Fatalf("the job and its pause button are not on the page:\n%s", space.body)
	}
	p := b.post(fmt.Sprintf("/dashboard/spaces/1/jobs/%d/pause", jobID), url.Values{"_csrf": {space.csrf(t)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("pause: %d %s", p.status, p.body)
	}
	if _, d := apiCall(t, "GET", fmt.Sprintf("/v2/jobs/%d", jobID), pro, ""); d["status"] != "paused" {
		t.Errorf("after the dashboard's pause: %v", d["status"])
	}
	// Pausing again: the state machine's refusal is shown, nothing changes.
	if p := b.post(fmt.Sprintf("/dashboard/spaces/1/jobs/%d/publish", jobID), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "paused") {
		t.Errorf("publish a paused job: %d", p.status)
	}

	// A key.
	p = b.post("/dashboard/spaces/1/keys", url.Values{"name": {"Website widget"}, "restricted": {"true"},
		"scopes": {"jobs:read", "spaces:read"}, "_csrf": {space.csrf(t)}})
	m := keyRE.FindStringSubmatch(p.body)
	if p.status != http.StatusCreated || m == nil || !strings.HasPrefix(m[1], "svc_rstr_") {
		t.Fatalf("create key: %d %s", p.status, p.body)
	}
	key := m[1]
	if s, _ := apiCall(t, "GET", "/v2/jobs", key, ""); s != 200 {
		t.Errorf("the new key reads jobs: %d", s)
	}
	if s, _ := apiCall(t, "POST", "/v2/jobs/pause", key, fmt.Sprintf(`{"job_id":%d}`, jobID)); s != 403 {
		t.Errorf("the restricted key writes: %d", s)
	}
	space = b.get("/dashboard/spaces/1")
	if strings.Contains(space.body, key) || !strings.Contains(space.body, key[:13]) {
		t.Errorf("the space page shows the key again, or not its hint")
	}
	var keyID int64
	if err := db.QueryRow(context.Background(), `SELECT id FROM gateway.api_keys WHERE key_hash = sha256($1::bytea)`, key).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	if p := b.post(fmt.Sprintf("/dashboard/spaces/1/keys/%d/revoke", keyID), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", p.status, p.body)
	}
	if s, _ := apiCall(t, "GET", "/v2/jobs", key, ""); s != 401 {
		t.Errorf("a revoked key reads: %d", s)
	}
	var actor, who string
	if err := db.QueryRow(context.Background(), `SELECT actor, actor_email FROM gateway.key_events WHERE key_id = $1 AND event = 'revoked'`,
		keyID).Scan(&actor, &who); err != nil || actor != "dashboard" || who != owner {
		t.Errorf("audit: %q %q %v", actor, who, err)
	}
	// Another space's key id is not this space's to revoke.
	var foreign int64
	if err := db.QueryRow(context.Background(), `SELECT id FROM gateway.api_keys WHERE space_id = 2 LIMIT 1`).Scan(&foreign); err == nil {
		if p := b.post(fmt.Sprintf("/dashboard/spaces/1/keys/%d/revoke", foreign), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusNotFound {
			t.Errorf("revoke another space's key: %d", p.status)
		}
	}
	// Bad input is shown on the page, nothing stored.
	for _, form := range []url.Values{
		{"name": {""}, "scopes": {"jobs:read"}},
		{"name": {"x"}, "scopes": {"write"}},
		{"name": {"x"}, "scopes": {"nope"}},
		{"name": {"x"}, "scopes": {"jobs:read"}, "rate_limit_per_minute": {"100000"}},
		{"name": {"x"}, "scopes": {"jobs:read"}, "rate_limit_per_minute": {"abc"}},
	} {
		form.Set("_csrf", space.csrf(t))
		if p := b.post("/dashboard/spaces/1/keys", form); p.status != 422 && p.status != 403 {
			t.Errorf("%v: %d", form, p.status)
		}
	}
}

// With the directory down, asking for a link still answers at once (the
// directory is asked off the request's path) and the mail arrives once it
// is back; pages that need it say 503, not 500.
func TestSignInSurvivesTheDirectoryDown(t *testing.T) {
	b := signIn(t, addAdmin(t, 1, "admin"))
	email := addAdmin(t, 1, "editor")
	if err := sys.Kill("directory"); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = sys.Start(context.Background(), "directory")
		}
	})
	if p := b.get("/dashboard/spaces/1"); p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "try again") {
		t.Errorf("space page without the directory: %d %s", p.status, p.body)
	}
	c := newClient(t)
	if p := c.post("/dashboard/sign-in", url.Values{"email": {email}, "_csrf": {c.get("/dashboard").csrf(t)}}); p.status != 200 {
		t.Fatalf("sign-in request without the directory: %d %s", p.status, p.body)
	}
	time.Sleep(1500 * time.Millisecond) // a relay round or two fails meanwhile
	if err := sys.Start(context.Background(), "directory"); err != nil {
		t.Fatal(err)
	}
	restarted = true
	mailedLinks(t, email, 1)
}

// The dashboard's replace follows creation's rule (issue 44): an owner acts
// as the space and may renew any key of its scopes, but a trusted-importer
// key is the operator's to make, so its replacement is refused (403, the key
// unchanged, the attempt in the audit log); an ordinary key is replaced.
func TestDashboardReplaceGrantsNothingTheOwnerCannot(t *testing.T) {
	owner := addAdmin(t, 1, "owner")
	out, err := sys.Run(context.Background(), "gateway-keys", "create", "-name", "importer", "-space", "1", "-scopes", "read,jobs:write",
		"-trusted-importer", "-json")
	if err != nil {
		t.Fatalf("gateway-keys: %v %s", err, out)
	}
	var trusted struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(out, &trusted); err != nil || trusted.ID == 0 {
		t.Fatalf("gateway-keys printed %s (%v)", out, err)
	}
	b := signIn(t, owner)
	space := b.get("/dashboard/spaces/1")
	p := b.post(fmt.Sprintf("/dashboard/spaces/1/keys/%d/replace", trusted.ID), url.Values{"grace_seconds": {"0"}, "_csrf": {space.csrf(t)}})
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "trusted-importer") || keyRE.MatchString(p.body) {
		t.Fatalf("replace a trusted importer from the dashboard: %d %s", p.status, p.body)
	}
	var replaced *int64
	var refused int
	if err := db.QueryRow(context.Background(), `SELECT replaced_by, (SELECT count(*) FROM gateway.key_events
		WHERE key_id = $1 AND event = 'rotate_refused' AND actor = 'dashboard' AND actor_email = $2)
		FROM gateway.api_keys WHERE id = $1`, trusted.ID, owner).Scan(&replaced, &refused); err != nil || replaced != nil || refused != 1 {
		t.Fatalf("after the refusal: replaced_by %v, %d refusals recorded (%v)", replaced, refused, err)
	}
	// An ordinary key of the space is replaced as before.
	p = b.post("/dashboard/spaces/1/keys", url.Values{"name": {"events"}, "scopes": {"events:read", "spaces:read"}, "_csrf": {space.csrf(t)}})
	if p.status != http.StatusCreated {
		t.Fatalf("create: %d %s", p.status, p.body)
	}
	var id int64
	if err := db.QueryRow(context.Background(), `SELECT id FROM gateway.api_keys WHERE key_hash = sha256($1::bytea)`,
		keyRE.FindStringSubmatch(p.body)[1]).Scan(&id); err != nil {
		t.Fatal(err)
	}
	space = b.get("/dashboard/spaces/1")
	if p := b.post(fmt.Sprintf("/dashboard/spaces/1/keys/%d/replace", id), url.Values{"grace_seconds": {"0"}, "_csrf": {space.csrf(t)}}); p.status != http.StatusCreated {
		t.Fatalf("replace an ordinary key: %d %s", p.status, p.body)
	}
}

var sourceRE = regexp.MustCompile(`id="source-(\d+)"`)

// A Pro space's owner adds an import source, sees it with its last run,
// syncs and deletes it, through the API's rules (a refused URL is shown on
// the page); a space that is not Pro, and an editor, have no sources.
func TestDashboardImportSources(t *testing.T) {
	b := signIn(t, addAdmin(t, 1, "owner")) // its own address: one sign-in mail per address per ResendEvery
	space := b.get("/dashboard/spaces/1")
	if space.status != 200 || !strings.Contains(space.body, `id="imports-h"`) || !strings.Contains(space.body, "/dashboard/spaces/1/imports") {
		t.Fatalf("the Pro space's page has no import sources: %d", space.status)
	}
	feed := "https://feeds.example/" + suite.RandomHex(4) + "/jobs.json"
	p := b.post("/dashboard/spaces/1/imports", url.Values{"kind": {"json"}, "url": {feed}, "interval_minutes": {"30"}, "_csrf": {space.csrf(t)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("add: %d %s", p.status, p.body)
	}
	space = b.get("/dashboard/spaces/1")
	if !strings.Contains(space.body, feed) || !strings.Contains(space.body, "30 min") {
		t.Fatalf("the new source is not on the page:\n%s", space.body)
	}
	var id int64
	if err := db.QueryRow(context.Background(), `SELECT id FROM jobs.import_sources WHERE url = $1 AND space_id = 1`, feed).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if m := sourceRE.FindAllStringSubmatch(space.body, -1); len(m) == 0 {
		t.Fatal("no source row")
	}
	// The space's key sees the same source through the API.
	if st, d := apiCall(t, "GET", fmt.Sprintf("/v2/import/sources/%d", id), sys.Keys["space 1 (Pro) key"], ""); st != 200 || d["feed_url"] != feed {
		t.Fatalf("the API: %d %v", st, d)
	}
	if p := b.post(fmt.Sprintf("/dashboard/spaces/1/imports/%d/sync", id), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("sync: %d %s", p.status, p.body)
	}
	// Refusals are the API's, shown on the page; nothing is stored.
	for form, want := range map[string]url.Values{
		"url must not name a private": {"kind": {"json"}, "url": {"https://169.254.169.254/latest"}},
		"interval_minutes must be":    {"kind": {"json"}, "url": {feed}, "interval_minutes": {"5"}},
		"token or url is required":    {"kind": {"lever"}, "company": {"X"}},
	} {
		want.Set("_csrf", space.csrf(t))
		if p := b.post("/dashboard/spaces/1/imports", want); p.status != 422 || !strings.Contains(html.UnescapeString(p.body), form) {
			t.Errorf("%v: %d, want 422 saying %q", want, p.status, form)
		}
	}
	// Another space's source is not this space's to sync or delete.
	var foreign int64
	if err := db.QueryRow(context.Background(), `INSERT INTO jobs.import_sources (space_id, key_id, kind, url, feed_url, interval_seconds)
		VALUES (2, 0, 'json', 'https://feeds.example/two.json', 'https://feeds.example/two.json', 3600) RETURNING id`).Scan(&foreign); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"sync", "delete"} {
		if p := b.post(fmt.Sprintf("/dashboard/spaces/1/imports/%d/%s", foreign, action), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusNotFound {
			t.Errorf("%s another space's source: %d", action, p.status)
		}
	}
	if p := b.post(fmt.Sprintf("/dashboard/spaces/1/imports/%d/delete", id), url.Values{"_csrf": {space.csrf(t)}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", p.status, p.body)
	}
	if space = b.get("/dashboard/spaces/1"); strings.Contains(space.body, feed) {
		t.Fatal("the deleted source is still on the page")
	}

	nonPro := signIn(t, addAdmin(t, 2, "owner"))
	p = nonPro.get("/dashboard/spaces/2")
	if strings.Contains(p.body, `id="imports-h"`) {
		t.Error("a space that is not Pro shows import sources")
	}
	if r := nonPro.post("/dashboard/spaces/2/imports", url.Values{"kind": {"json"}, "url": {feed}, "_csrf": {p.csrf(t)}}); r.status != http.StatusForbidden {
		t.Errorf("a space that is not Pro adds a source: %d", r.status)
	}
	editor := signIn(t, addAdmin(t, 1, "editor"))
	p = editor.get("/dashboard/spaces/1")
	if strings.Contains(p.body, `id="imports-h"`) {
		t.Error("an editor sees import sources")
	}
	if r := editor.post("/dashboard/spaces/1/imports", url.Values{"kind": {"json"}, "url": {feed}, "_csrf": {p.csrf(t)}}); r.status != http.StatusForbidden {
		t.Errorf("an editor adds a source: %d", r.status)
	}
}
