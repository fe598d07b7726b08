package webhooks

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// attackers: keys that do not own an endpoint (another space's, platform
// keys, restricted ones, the owner's space without webhooks:manage) try
// random routes on it through the gateway; none learns its secret or its
// deliveries or changes it. Then a second space's endpoint hears nothing
// of the first space's jobs, and a platform key's endpoint hears them
// (they are public) but not another platform key's draft.
func attackers(t *testing.T, sys *suite.Suite, ownerKey string, victim int64, secret string) {
	gw := sys.URL["gateway"]
	newKey := func(args ...string) string {
		out, err := sys.Run(t.Context(), "gateway-keys", append([]string{"create", "-name", "attacker", "-json"}, args...)...)
		if err != nil {
			t.Fatalf("gateway-keys %v: %v %s", args, err, out)
		}
		var k struct{ Key string }
		if err := json.Unmarshal(out, &k); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		return k.Key
	}
	keys := map[string]string{
		"space 2, webhooks:manage":        newKey("-space", "2", "-scopes", "read,jobs:write,webhooks:manage"),
		"space 2, read":                   newKey("-space", "2", "-scopes", "read"),
		"platform, webhooks:manage":       newKey("-scopes", "read,jobs:write,webhooks:manage"),
		"platform, read":                  newKey("-scopes", "read"),
		"restricted, webhooks:manage":     newKey("-restricted", "-scopes", "read,webhooks:manage"),
		"space 1 without webhooks:manage": newKey("-space", "1", "-scopes", "read,jobs:write"),
	}
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}

	var before struct {
		UpdatedAt string `json:"updated_at"`
		Enabled   bool
		URL       string
	}
	base := fmt.Sprintf("%s/v2/webhooks/%d", gw, victim)
	if st := call(t, "GET", base, ownerKey, "", &before); st != 200 {
		t.Fatalf("owner GET: %d", st)
	}
	var dl struct {
		Deliveries []struct{ ID int64 }
	}
	if st := call(t, "GET", base+"/deliveries", ownerKey, "", &dl); st != 200 || len(dl.Deliveries) == 0 {
		t.Fatalf("owner deliveries: %d %+v", st, dl)
	}
	nDeliveries := len(dl.Deliveries)
	delivery := dl.Deliveries[0].ID
	routes := []struct{ method, path, body string }{
		{"GET", base, ""},
		{"GET", base + "/deliveries", ""},
		{"POST", fmt.Sprintf("%s/deliveries/%d/redeliver", base, delivery), ""},
		{"POST", base + "/recover", fmt.Sprintf(`{"since":%q}`, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))},
		{"POST", base + "/ping", ""},
		{"POST", base + "/rotate-secret", ""},
		{"PATCH", base, `{"url":"https://attacker.example/steal","enabled":true}`},
		{"DELETE", base, ""},
		{"GET", gw + "/v2/webhooks", ""},
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("attacker seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 60 {
		name := names[rng.IntN(len(names))]
		r := routes[rng.IntN(len(routes))]
		st, body := raw(t, r.method, r.path, keys[name], r.body)
		if strings.Contains(body, secret) || strings.Contains(body, "whsec_") {
			t.Fatalf("%s: %s %s leaked a secret: %s", name, r.method, r.path, body)
		}
		if r.path == gw+"/v2/webhooks" {
			if st == 200 && strings.Contains(body, fmt.Sprintf(`"id":%d,`, victim)) {
				t.Fatalf("%s lists the endpoint: %s", name, body)
			}
			continue
		}
		if st != 403 && st != 404 && st != 429 {
			t.Fatalf("%s: %s %s → %d %s", name, r.method, r.path, st, body)
		}
		if !strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %s %s → %d without the error envelope: %s", name, r.method, r.path, st, body)
		}
	}
	var after struct {
		UpdatedAt string `json:"updated_at"`
		Enabled   bool
		URL       string
	}
	if st := call(t, "GET", base, ownerKey, "", &after); st != 200 || after != before {
		t.Fatalf("the endpoint changed: %d %+v → %+v", st, before, after)
	}
	if st := call(t, "GET", base+"/deliveries", ownerKey, "", &dl); st != 200 || len(dl.Deliveries) != nDeliveries {
		t.Fatalf("deliveries %d → %d (%d)", nDeliveries, len(dl.Deliveries), st)
	}

	// Who hears what: space 2's endpoint and a platform key's, then a job
	// of space 1.
	space2, platform := &collector{}, &collector{}
	for _, c := range []struct {
		rcv *collector
		key string
	}{{space2, keys["space 2, webhooks:manage"]}, {platform, keys["platform, webhooks:manage"]}} {
		srv := httptest.NewServer(c.rcv)
		t.Cleanup(srv.Close)
		body := fmt.Sprintf(`{"url":%q,"events":["job.created","job.closed"]}`, srv.URL)
		if st := call(t, "POST", gw+"/v2/webhooks", c.key, body, nil); st != 201 {
			t.Fatalf("register: %d", st)
		}
	}
	// A draft of another platform key (its jobs start as drafts) is not
	// the platform endpoint's to hear of.
	var draft struct {
		JobID  int64 `json:"job_id"`
		Status string
	}
	writer := newKey("-scopes", "read,jobs:write")
	db := `{"title":"Webhook Platform Draft","company":"Factory","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`
	if st := call(t, "POST", gw+"/v2/jobs", writer, db, &draft); st != 201 || draft.Status != "draft" {
		t.Fatalf("the other platform key's job: %d %+v", st, draft)
	}
	var job struct {
		JobID int64 `json:"job_id"`
	}
	jb := `{"title":"Webhook Space One Host","company":"Factory","description":"<p>Host our members.</p>","job_type":"fulltime","tags":"hosting","city_name":"Berlin"}`
	if st := call(t, "POST", gw+"/v2/jobs", ownerKey, jb, &job); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if st := call(t, "POST", gw+"/v2/jobs/close", ownerKey, fmt.Sprintf(`{"job_id":%d}`, job.JobID), nil); st != 200 {
		t.Fatalf("close: %d", st)
	}
	// The platform endpoint hears the public job's life; by then the
	// dispatch has passed both events for every endpoint.
	wait(t, 60*time.Second, func() bool { return platform.count(job.JobID) >= 2 })
	time.Sleep(2 * time.Second) // deliveries to space 2 would be under way by now
	if n := space2.count(job.JobID); n != 0 {
		t.Fatalf("space 2's endpoint heard %d events of space 1's job", n)
	}
	if n := platform.count(draft.JobID); n != 0 {
		t.Fatalf("the platform endpoint heard %d events of another key's draft", n)
	}
}

// collector keeps the job ids of what it is sent.
type collector struct {
	mu   sync.Mutex
	jobs []int64
}

func (c *collector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var m message
	b, _ := io.ReadAll(req.Body)
	_ = json.Unmarshal(b, &m)
	c.mu.Lock()
	c.jobs = append(c.jobs, m.Data.IDJob)
	c.mu.Unlock()
	w.WriteHeader(204)
}

func (c *collector) count(job int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, j := range c.jobs {
		if j == job {
			n++
		}
	}
	return n
}

func raw(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	status, b := suite.Do(t, method, url, key, body)
	return status, string(b)
}
