// Package e2e runs the whole suite as real processes (gateway, jobs,
// directory, content, community) on loopback against a throwaway database and
// the real Redis, loads the demo data with the seed commands, and drives the
// main flows through the gateway only, the way a client would.
package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// s is what the tests need of the running system.
var s struct {
	gateway string            // base URL
	direct  map[string]string // backend base URLs, to prove they refuse direct calls
	keys    map[string]string // demo keys by kind
	bin     string
	env     []string
}

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "e2e", Keys: true}, func(sys *suite.Suite) error {
		s.gateway, s.keys, s.bin, s.env = sys.URL["gateway"], sys.Keys, sys.Bin, sys.Env
		s.direct = map[string]string{}
		for _, name := range []string{"jobs", "directory", "content", "community"} {
			s.direct[name] = sys.URL[name]
		}
		return nil
	}))
}

func randomHex(n int) string { return suite.RandomHex(n) }

type envelope = suite.Envelope

type reply struct {
	status int
	header http.Header
	env    envelope
	raw    []byte
}

func (r reply) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.env.Data, v); err != nil {
		t.Fatalf("decode data: %v: %s", err, r.raw)
	}
}

var httpClient = &http.Client{Timeout: 15 * time.Second}

var checker = contract.MustNew()

// call sends a request (key "" sends none) and checks the answer against the
// OpenAPI document.
func call(t *testing.T, method, url, key, body string, hdr ...string) reply {
	t.Helper()
	return send(t, true, method, url, key, body, hdr...)
}

// callUndocumented is call for a route the document cannot describe (an
// unknown path, a wrong method): only the envelope is checked.
func callUndocumented(t *testing.T, method, url, key, body string) reply {
	t.Helper()
	return send(t, false, method, url, key, body)
}

func send(t *testing.T, check bool, method, url, key, body string, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if key != "" {
		hdr = append([]string{"X-API-Key", key}, hdr...)
	}
	req, err := suite.NewRequest(ctx, method, url, suite.Body(body), hdr...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	// Every answer must be what the OpenAPI document promises.
	if check && strings.HasPrefix(url, s.gateway) {
		if err := checker.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
			t.Errorf("contract: %v", err)
		}
	}
	if resp.StatusCode != http.StatusNotModified {
		if err := json.Unmarshal(raw, &r.env); err != nil {
			t.Fatalf("%s %s: not an envelope (%d): %.300s", method, url, resp.StatusCode, raw)
		}
		if r.env.Status != r.status {
			t.Fatalf("%s %s: envelope status %d, HTTP %d", method, url, r.env.Status, r.status)
		}
	}
	return r
}
