// Package cache runs the suite with the gateway's response cache on and
// proves, with concurrent writers and readers through the gateway, that
// every read made after a write was acknowledged sees that write, while
// repeated reads are answered from the cache or with 304s.
package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/tests/suite"
)

var dbURL string

func TestMain(m *testing.M) { os.Exit(suite.MainDB(m, "e2e_cache", &dbURL, nil)) }

var client = &http.Client{Timeout: 15 * time.Second}

type answer struct {
	status int
	header http.Header
	env    suite.Envelope
	raw    []byte
}

func send(t *testing.T, method, url, body string, hdr ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, method, url, suite.Body(body), hdr...)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return answer{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.env); err != nil {
			t.Errorf("%s %s: not an envelope (%d): %.200s", method, url, resp.StatusCode, raw)
		}
	}
	return a
}

type listed struct {
	Jobs []struct {
		ID     json.RawMessage `json:"id_job"` // a number; a string in older answers
		Status string          `json:"status"`
	} `json:"jobs"`
	Total int `json:"total"`
}

func TestReadsAfterAcknowledgedWrites(t *testing.T) {
	t.Run("one gateway", func(t *testing.T) { readsAfterWrites(t, 1, "memory") })
	// Each gateway keeps its own cache: a client whose requests alternate
	// between two (no keep-alive, the balancer turns each connection to the
	// next replica) must still see every acknowledged write.
	t.Run("two gateways", func(t *testing.T) { readsAfterWrites(t, 2, "memory") })
	// The two share one cache in Redis: what one kept, the other serves.
	t.Run("two gateways sharing redis", func(t *testing.T) { readsAfterWrites(t, 2, "redis") })
}

func readsAfterWrites(t *testing.T, replicas int, store string) {
	if replicas > 1 {
		old := client
		client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		t.Cleanup(func() { client = old })
	}
	sys := suite.StartTest(t, suite.Options{
		Name: "cache", DatabaseURL: dbURL, Keys: true, Admin: true, Replicas: replicas,
		Env: []string{"RESPONSE_CACHE_MB=16", "RESPONSE_CACHE_STORE=" + store, "JOBS_PAGINATION_ENABLED=true",
			"READ_RATE_LIMIT_PER_MINUTE=1000000", "WRITE_RATE_LIMIT_PER_MINUTE=100000"},
	})
	gw := sys.URL["gateway"]
	importer := sys.Keys["trusted importer"]
	if importer == "" {
		t.Fatalf("no trusted importer key in %v", sys.Keys)
	}
	// The list every reader and writer asks for: the newest Lisbon jobs.
	list := gw + "/v2/jobs?city=lisbon&per_page=50"
	// Creates acknowledged so far (a lower bound of what a read must see),
	// pauses sent so far (an upper bound of what it may miss).
	var acked, paused atomic.Int64
	base := send(t, "GET", list, "", "X-API-Key", importer)
	var before listed
	if err := json.Unmarshal(base.env.Data, &before); err != nil || base.status != 200 || base.header.Get("ETag") == "" {
		t.Fatalf("first list: %d ETag %q: %.300s", base.status, base.header.Get("ETag"), base.raw)
	}

	stop := make(chan struct{})
	var readers sync.WaitGroup
	var notModified, full atomic.Int64
	for range 4 { // readers keep the cache warm and revalidate their copy
		readers.Go(func() {
			etag := ""
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := send(t, "GET", list, "", "X-API-Key", importer, "If-None-Match", etag)
				switch a.status {
				case 304:
					notModified.Add(1)
				case 200:
					full.Add(1)
					etag = a.header.Get("ETag")
				default:
					t.Errorf("reader: %d %.200s", a.status, a.raw)
					return
				}
			}
		})
	}

	idRE := regexp.MustCompile(`"job_id":\s*"?(\d+)`)
	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			for i := range 12 {
				body := fmt.Sprintf(`{"title":"Cache check %d-%d %s","company":"Tejo","description":"Front desk","job_type":"parttime","tags":"host","city_name":"Lisbon"}`,
					w, i, suite.RandomHex(3))
				c := send(t, "POST", gw+"/v2/jobs", body, "X-API-Key", importer)
				m := idRE.FindSubmatch(c.raw)
				if c.status != 201 || m == nil {
					t.Errorf("create: %d %.300s", c.status, c.raw)
					return
				}
				id := string(m[1])
				n := acked.Add(1)
				// Acknowledged: the next reads see it, whoever cached what before.
				one := send(t, "GET", gw+"/v2/jobs/"+id, "", "X-API-Key", importer)
				if one.status != 200 {
					t.Errorf("job %s after its create: %d %.200s", id, one.status, one.raw)
				}
				l := send(t, "GET", list, "", "X-API-Key", importer)
				var got listed
				_ = json.Unmarshal(l.env.Data, &got)
				// At least the creates acknowledged before the read, less every
				// pause acknowledged by the time it answered.
				if low := before.Total + int(n) - int(paused.Load()); got.Total < low || !contains(got, id) {
					t.Errorf("list after create %s (acked %d): total %d, want ≥ %d; listed %v", id, n, got.Total, low, contains(got, id))
				}
				if i%4 != 3 {
					continue
				}
				// Every fourth job is paused again: gone from the list at once.
				paused.Add(1) // before sending: its effect may be seen before its answer
				p := send(t, "POST", gw+"/v2/jobs/pause", `{"job_id":`+id+`}`, "X-API-Key", importer)
				if p.status != 200 {
					t.Errorf("pause %s: %d %.200s", id, p.status, p.raw)
					continue
				}
				l = send(t, "GET", list, "", "X-API-Key", importer)
				got = listed{}
				_ = json.Unmarshal(l.env.Data, &got)
				if contains(got, id) {
					t.Errorf("paused job %s still listed after the pause was acknowledged", id)
				}
				if one := send(t, "GET", gw+"/v2/jobs/"+id, "", "X-API-Key", importer); !regexp.MustCompile(`"status":\s*"paused"`).Match(one.raw) {
					t.Errorf("job %s after its pause: %.300s", id, one.raw)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if notModified.Load() == 0 || full.Load() == 0 {
		t.Errorf("readers got %d 304s and %d 200s; want both", notModified.Load(), full.Load())
	}

	// What the gateway says it did: hits and 304s, and misses after writes.
	for _, gw := range sys.Replicas("gateway") {
		resp, err := client.Get(sys.Admin[gw] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, outcome := range []string{"hit", "miss", "not_modified"} {
			re := regexp.MustCompile(`gateway_response_cache_total\{outcome="` + outcome + `",route="/v2/jobs"\} (\d+)`)
			m := re.FindSubmatch(metrics)
			if m == nil {
				t.Errorf("%s: no gateway_response_cache_total for %s on /v2/jobs", gw, outcome)
				continue
			}
			if n, _ := strconv.Atoi(string(m[1])); n == 0 {
				t.Errorf("%s: gateway_response_cache_total{%s} is 0", gw, outcome)
			}
		}
		if store == "redis" {
			m := regexp.MustCompile(`gateway_response_cache_writes_total\{outcome="written"\} (\d+)`).FindSubmatch(metrics)
			if m == nil || string(m[1]) == "0" {
				t.Errorf("%s: no shared entries written (%q)", gw, m)
			}
		}
	}
	t.Logf("readers: %d 304s, %d full answers; %d creates", notModified.Load(), full.Load(), acked.Load())
}

func contains(l listed, id string) bool {
	for _, j := range l.Jobs {
		if strings.Trim(string(j.ID), `"`) == id {
			return true
		}
	}
	return false
}
