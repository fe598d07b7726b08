package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mmcdole/gofeed"

	"github.com/coworkjobs/coworkjobs/libs/browsertest"
	"github.com/coworkjobs/coworkjobs/libs/mailcatcher"
	"github.com/coworkjobs/coworkjobs/tests/faults"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// TestAlertReach follows what an alert reaches beyond the JSON routes,
// through the gateway: platform keys with alerts:write (and attackers'
// keys), the pages behind the mails' links in a real browser (a GET
// confirms or deletes nothing), and the alert's own feeds, parsed by a
// feed reader's library, which never carry the address.
func TestAlertReach(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal")
	}
	ctx := context.Background()
	temporal := faults.Temporal(t)
	smtpAddr, dir := mailcatcher.StartTest(t)
	sys := suite.StartTest(t, suite.Options{
		Name: "alertreach", DatabaseURL: dbURL, Keys: true, Workers: []string{"jobs-worker"},
		Env: []string{"TEMPORAL_ADDRESS=" + temporal.Addr, "SMTP_URL=smtp://" + smtpAddr, "JOBS_RELAY_INTERVAL=200ms"},
	})
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	gw := sys.URL["gateway"]

	type made struct {
		Key string
		ID  int64
	}
	newKey := func(args ...string) made {
		out, err := sys.Run(ctx, "gateway-keys", append([]string{"create", "-name", "alerts", "-json"}, args...)...)
		if err != nil {
			t.Fatalf("gateway-keys %v: %v %s", args, err, out)
		}
		var k made
		if err := json.Unmarshal(out, &k); err != nil || k.Key == "" || k.ID == 0 {
			t.Fatalf("%v %s", err, out)
		}
		return k
	}
	platform := newKey("-scopes", "alerts:write", "-rate-limit", "7")
	revoked := newKey("-scopes", "alerts:write")
	if out, err := sys.Run(ctx, "gateway-keys", "revoke", "-id", strconv.FormatInt(revoked.ID, 10)); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	post := func(hdr map[string]string, email string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", gw+"/v2/alerts", strings.NewReader(fmt.Sprintf(`{"email":%q,"q":"barista","city":"berlin"}`, email)))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	keyOf := func(email string) (int64, bool) {
		var id int64
		err := db.QueryRow(ctx, `SELECT key_id FROM jobs.alerts WHERE address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1)`, email).Scan(&id)
		return id, err == nil
	}

	// Attackers: every refused request stores no alert.
	for name, c := range map[string]struct {
		hdr  map[string]string
		want int
	}{
		"a key without alerts:write":            {map[string]string{"X-API-Key": sys.Keys["space 1 (Pro) key"]}, 403},
		"a restricted key with alerts:write":    {map[string]string{"X-API-Key": newKey("-restricted", "-scopes", "read,alerts:write").Key}, 403},
		"a revoked key":                         {map[string]string{"X-API-Key": revoked.Key}, 401},
		"a made-up key":                         {map[string]string{"X-API-Key": "svc_live_" + strings.Repeat("x", 40)}, 401},
		"a Basic Authorization header":          {map[string]string{"Authorization": "Basic YTpi"}, 401},
		"an empty Bearer":                       {map[string]string{"Authorization": "Bearer "}, 401},
		"a key of alerts:write in a bad header": {map[string]string{"Authorization": "Token " + platform.Key}, 401},
	} {
		email := "attack-" + suite.RandomHex(4) + "@example.com"
		status, _, body := post(c.hdr, email)
		if status != c.want {
			t.Errorf("%s: %d %s, want %d", name, status, body, c.want)
		}
		if _, stored := keyOf(email); stored {
			t.Errorf("%s: an alert was stored", name)
		}
	}

	// No key: public, per IP, key_id 0.
	public := "public-" + suite.RandomHex(4) + "@example.com"
	if status, hdr, body := post(nil, public); status != 202 || strings.Contains(hdr.Get("RateLimit-Policy"), "key_write") {
		t.Fatalf("public create: %d %s %v", status, body, hdr)
	}
	if id, ok := keyOf(public); !ok || id != 0 {
		t.Fatalf("public alert key_id %d (%v)", id, ok)
	}
	// The platform's key, by each of the three ways: recorded, on its own limit.
	seeker := "seeker-" + suite.RandomHex(4) + "@example.com"
	for i, hdr := range []map[string]string{{"X-API-Key": platform.Key}, {"Authorization": "Bearer " + platform.Key}} {
		status, h, body := post(hdr, seeker)
		if status != 202 || h.Get("X-RateLimit-Limit") != "7" {
			t.Fatalf("platform create %d: %d %s, limit %q (want the key's 7)", i, status, body, h.Get("X-RateLimit-Limit"))
		}
	}
	if id, ok := keyOf(seeker); !ok || id != platform.ID {
		t.Fatalf("platform alert key_id %d, want %d", id, platform.ID)
	}

	// The confirmation page: its GET (a link scanner) confirms nothing.
	confirm := waitMail(t, dir, seeker, 1)
	page := gw + linkIn(t, confirm[0].Text, "/alerts/confirm")
	for range 2 {
		resp, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(b), `id="confirm"`) {
			t.Fatalf("confirm page: %d %s", resp.StatusCode, b)
		}
	}
	confirmed := func() bool {
		var ok bool
		if err := db.QueryRow(ctx, `SELECT confirmed_at IS NOT NULL FROM jobs.alerts WHERE address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1)`, seeker).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if confirmed() {
		t.Fatal("GET of the confirmation page confirmed the alert")
	}
	bctx := browsertest.New(t)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.ID("confirm")),
		chromedp.Click(chromedp.ID("confirm")),
		chromedp.WaitVisible(`//h1[text()="Your job alert is confirmed"]`),
	); err != nil {
		t.Fatalf("confirm in the browser: %v", err)
	}
	if !confirmed() {
		t.Fatal("the button did not confirm")
	}

	// A match, then the alert's feeds.
	var job struct {
		JobID int64 `json:"job_id"`
	}
	pro := sys.Keys["space 1 (Pro) key"]
	if status, msg := call(t, "POST", gw+"/v2/jobs", pro, `{"title":"Barista Host","company":"Factory","description":"<p>Coffee</p>",
		"job_type":"fulltime","tags":"coffee","city_name":"Berlin"}`, &job); status != 201 {
		t.Fatalf("create job: %d %s", status, msg)
	}
	match := waitMatch(t, dir, seeker)
	manageLink := linkIn(t, match.Text, "/alerts/manage")
	var view struct {
		Feeds struct{ RSS, Atom, JSON string }
	}
	if status, msg := call(t, "GET", gw+"/v2"+manageLink, "", "", &view); status != 200 || view.Feeds.RSS == "" || view.Feeds.JSON == "" {
		t.Fatalf("manage view: %d %s", status, msg)
	}
	for _, u := range []string{view.Feeds.RSS, view.Feeds.Atom, view.Feeds.JSON} {
		if !strings.HasPrefix(u, base+"/v2/alerts/feed?") {
			t.Fatalf("feed URL %q", u)
		}
		resp, err := http.Get(gw + strings.TrimPrefix(u, base))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", u, resp.StatusCode, raw)
		}
		if strings.Contains(strings.ToLower(string(raw)), strings.ToLower(seeker)) || strings.Contains(string(raw), "@example.com") {
			t.Fatalf("the feed %s carries the address:\n%s", u, raw)
		}
		f, err := gofeed.NewParser().ParseString(string(raw))
		if err != nil {
			t.Fatalf("%s does not parse: %v\n%s", u, err, raw)
		}
		if len(f.Items) != 1 || !strings.Contains(f.Items[0].Title, "Barista Host") || !strings.Contains(f.Items[0].Link, fmt.Sprintf("-%d", job.JobID)) {
			t.Fatalf("%s (%s): items %+v", u, f.FeedType, f.Items)
		}
	}
	// A feed token manages nothing; a management token is no feed token.
	feedToken := view.Feeds.RSS[strings.Index(view.Feeds.RSS, "token=")+len("token="):]
	if status, _ := call(t, "GET", gw+"/v2/alerts/manage?token="+feedToken, "", "", nil); status != 404 {
		t.Fatalf("manage with the feed's token: %d, want 404", status)
	}
	if status, _ := call(t, "POST", gw+"/v2/alerts/unsubscribe?token="+feedToken, "", "", nil); status != 404 {
		t.Fatalf("unsubscribe with the feed's token: %d, want 404", status)
	}
	manageToken := manageLink[strings.Index(manageLink, "token=")+len("token="):]
	if status, _ := call(t, "GET", gw+"/v2/alerts/feed?token="+manageToken, "", "", nil); status != 404 {
		t.Fatalf("the feed with the management token: %d, want 404", status)
	}
	// A job paused leaves the feed.
	if status, msg := call(t, "POST", gw+"/v2/jobs/pause", pro, fmt.Sprintf(`{"job_id":%d}`, job.JobID), nil); status != 200 {
		t.Fatalf("pause job: %d %s", status, msg)
	}
	resp, err := http.Get(gw + strings.TrimPrefix(view.Feeds.JSON, base))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gofeed.NewParser().Parse(resp.Body)
	resp.Body.Close()
	if err != nil || len(f.Items) != 0 {
		t.Fatalf("after the pause: %v %+v", err, f)
	}

	// The management page in the browser: pause, change frequency, delete.
	state := func() (paused bool, freq string, n int) {
		_ = db.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(paused), false), coalesce(max(frequency), '') FROM jobs.alerts WHERE address_id = (SELECT id FROM jobs.alert_addresses WHERE email = $1)`,
			seeker).Scan(&n, &paused, &freq)
		return
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(gw+manageLink),
		chromedp.WaitVisible(chromedp.ID("pause")),
		chromedp.Click(chromedp.ID("pause")),
		chromedp.WaitVisible(`//strong[@id="status" and text()="paused"]`),
	); err != nil {
		t.Fatalf("pause in the browser: %v", err)
	}
	if paused, _, _ := state(); !paused {
		t.Fatal("the page's pause did not pause")
	}
	if err := chromedp.Do(bctx,
		chromedp.SetValue(chromedp.ID("frequency-select"), "weekly"),
		chromedp.Click(chromedp.ID("save-frequency")),
		chromedp.WaitVisible(`//strong[@id="frequency" and text()="weekly"]`),
		chromedp.Click(chromedp.ID("resume")),
		chromedp.WaitVisible(`//strong[@id="status" and text()="active"]`),
	); err != nil {
		t.Fatalf("frequency and resume in the browser: %v", err)
	}
	if paused, freq, _ := state(); paused || freq != "weekly" {
		t.Fatalf("after the page: paused %v, frequency %q", paused, freq)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.ID("delete")),
		chromedp.WaitVisible(`//h1[text()="Your job alert is deleted"]`),
	); err != nil {
		t.Fatalf("delete in the browser: %v", err)
	}
	if _, _, n := state(); n != 0 {
		t.Fatalf("%d alerts left after the page's delete", n)
	}
	// The deleted alert's links: an HTML 404 page, and the feed a 404.
	resp, err = http.Get(gw + manageLink)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the deleted alert's page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if status, _ := call(t, "GET", gw+strings.TrimPrefix(view.Feeds.RSS, base), "", "", nil); status != 404 {
		t.Fatalf("the deleted alert's feed: %d", status)
	}
}
