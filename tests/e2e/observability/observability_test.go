// Package observability runs the gateway, jobs and directory as real
// processes exporting their traces over OTLP/HTTP to a receiver inside the
// test (the way a collector would get them), and checks the promises of the
// observability issue on what the processes really emit: one request is one
// trace across the services with their database calls, API keys appear in no
// span and no log line, every log line of a request carries its trace and
// span ids, and every /metrics output is promlint clean with bounded labels.
package observability

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/tests/suite"
)

// span is one received span with its service.
type span struct {
	Service, Name, TraceID, SpanID, ParentID string
	Kind                                     tracepb.Span_SpanKind
	Attrs                                    map[string]string
	Raw                                      string // every string the span carries, for leak checks
}

// receiver is an OTLP/HTTP trace endpoint.
type receiver struct {
	mu    sync.Mutex
	spans []span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := span{Service: service, Name: s.GetName(), Kind: s.GetKind(), Attrs: map[string]string{},
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId())}
				raw := []string{s.GetName(), s.GetStatus().GetMessage()}
				for _, a := range s.GetAttributes() {
					v := a.GetValue().GetStringValue()
					if v == "" {
						v = strconv.FormatInt(a.GetValue().GetIntValue(), 10)
					}
					sp.Attrs[a.GetKey()] = v
					raw = append(raw, a.GetKey()+"="+v)
				}
				for _, e := range s.GetEvents() {
					raw = append(raw, e.GetName())
					for _, a := range e.GetAttributes() {
						raw = append(raw, a.GetValue().GetStringValue())
					}
				}
				sp.Raw = strings.Join(raw, "\n")
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (r *receiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

var (
	otlp   = &receiver{}
	logDir string
	urls   map[string]string // API base URLs
	admins map[string]string // admin base URLs
	keys   map[string]string
	// checker validates the gateway's answers against api/openapi.yaml.
	checker = contract.MustNew()
)

func TestMain(m *testing.M) {
	collector := httptest.NewServer(otlp)
	code := suite.Main(m, suite.Options{
		Name: "obs", Admin: true, Keys: true,
		// The jobs worker starts without Temporal (lazy client) and serves /metrics.
		Workers: []string{"jobs-worker"},
		Seeds:   [][]string{{"directory-seed", "demo"}},
		// No Temporal: port 1 refuses at once (TestWorkerWithoutTemporalIsNotReady).
		Env: []string{"LOG_LEVEL=info", "ACCESS_LOG=true", "TEMPORAL_ADDRESS=127.0.0.1:1",
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=", "OTEL_TRACES_SAMPLER=", "OTEL_SDK_DISABLED="},
	}, func(sys *suite.Suite) error {
		urls, admins, keys, logDir = sys.URL, sys.Admin, sys.Keys, sys.LogDir
		if keys["trusted importer"] == "" {
			return fmt.Errorf("no trusted importer key in %v", keys)
		}
		return nil
	})
	collector.Close()
	os.Exit(code)
}

func randomHex(n int) string { return suite.RandomHex(n) }

// send makes one request; hdr is name, value pairs.
func send(t *testing.T, method, url, body string, hdr ...string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := suite.NewRequest(ctx, method, url, suite.Body(body), hdr...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// What the gateway answers on a documented route is what the OpenAPI document promises.
	if strings.HasPrefix(url, urls["gateway"]) && checker.Documented(req.Method, req.URL.Path) {
		if err := checker.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
			t.Errorf("contract: %v", err)
		}
	}
	return resp
}

// traceOf waits for the gateway's server span of request rid and returns
// every span of its trace once the expected services have reported.
func traceOf(t *testing.T, rid string, want func([]span) bool) (string, []span) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var tid string
	var got []span
	for time.Now().Before(deadline) {
		got = got[:0]
		all := otlp.all()
		for _, s := range all {
			if s.Service == "gateway" && s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Attrs["coworkjobs.request_id"] == rid {
				tid = s.TraceID
			}
		}
		if tid != "" {
			for _, s := range all {
				if s.TraceID == tid {
					got = append(got, s)
				}
			}
			if want(got) {
				return tid, got
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range got {
		t.Logf("%s %s %s parent=%s %v", s.Service, s.Name, s.SpanID, s.ParentID, s.Attrs)
	}
	t.Fatalf("trace of request %s (trace %q) incomplete", rid, tid)
	return "", nil
}

func isDB(s span) bool {
	return s.Attrs["db.system.name"] == "postgresql" || s.Attrs["db.system"] == "postgresql"
}

// One job creation through the gateway is one trace: the gateway's server
// span, its database lookup of the key, its Redis rate-limit call and its
// proxy span; the jobs service's server span as a child of the proxy span,
// with its queries; and the directory's server span (the city look-up the
// jobs service makes) with its queries.
func TestOneRequestIsOneTraceAcrossServicesAndDatabases(t *testing.T) {
	body := fmt.Sprintf(`{"title":"Trace %s","company":"Tejo","description":"Front desk","job_type":"parttime","tags":"host","city_name":"Lisbon"}`, randomHex(4))
	resp := send(t, "POST", urls["gateway"]+"/v2/jobs", body, "X-API-Key", keys["trusted importer"])
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	rid := resp.Header.Get("X-Request-ID")
	has := func(spans []span, service string, pred func(span) bool) *span {
		for i, s := range spans {
			if s.Service == service && pred(s) {
				return &spans[i]
			}
		}
		return nil
	}
	named := func(name string, kind tracepb.Span_SpanKind) func(span) bool {
		return func(s span) bool { return s.Name == name && s.Kind == kind }
	}
	_, spans := traceOf(t, rid, func(spans []span) bool {
		return has(spans, "jobs", named("POST /v2/jobs", tracepb.Span_SPAN_KIND_SERVER)) != nil &&
			has(spans, "directory", func(s span) bool { return s.Kind == tracepb.Span_SPAN_KIND_SERVER }) != nil &&
			has(spans, "jobs", isDB) != nil && has(spans, "directory", isDB) != nil && has(spans, "gateway", isDB) != nil
	})
	gwServer := has(spans, "gateway", named("POST /v2/jobs", tracepb.Span_SPAN_KIND_SERVER))
	proxy := has(spans, "gateway", named("POST /v2/jobs", tracepb.Span_SPAN_KIND_CLIENT))
	jobsServer := has(spans, "jobs", named("POST /v2/jobs", tracepb.Span_SPAN_KIND_SERVER))
	dirClient := has(spans, "jobs", func(s span) bool {
		return s.Kind == tracepb.Span_SPAN_KIND_CLIENT && strings.Contains(s.Name, "/internal/")
	})
	dirServer := has(spans, "directory", func(s span) bool { return s.Kind == tracepb.Span_SPAN_KIND_SERVER })
	redis := has(spans, "gateway", func(s span) bool { return s.Attrs["db.system"] == "redis" || s.Attrs["db.system.name"] == "redis" })
	for name, s := range map[string]*span{"gateway server": gwServer, "gateway proxy": proxy, "jobs server": jobsServer,
		"jobs → directory client": dirClient, "directory server": dirServer, "gateway redis": redis} {
		if s == nil {
			t.Fatalf("no %s span in the trace", name)
		}
	}
	if proxy.ParentID != gwServer.SpanID || jobsServer.ParentID != proxy.SpanID {
		t.Fatalf("gateway server %s → proxy %s (parent %s) → jobs server (parent %s): broken chain",
			gwServer.SpanID, proxy.SpanID, proxy.ParentID, jobsServer.ParentID)
	}
	if dirServer.ParentID != dirClient.SpanID {
		t.Fatalf("directory server span's parent %s is not the jobs client span %s", dirServer.ParentID, dirClient.SpanID)
	}
	if gwServer.Attrs["http.route"] != "/v2/jobs" || gwServer.Attrs["http.response.status_code"] != "201" {
		t.Fatalf("gateway server span attributes %v", gwServer.Attrs)
	}
}

var logLine = regexp.MustCompile(`^\{.*\}$`)

// An API key sent in any of the three ways appears in no span and no log
// line of any service; the access log and every other line logged within a
// request carry its request id, trace id and span id.
func TestKeysNeverInSpansOrLogsAndRequestLinesCarryTraceIDs(t *testing.T) {
	key := keys["trusted importer"]
	var rids []string
	for _, hdr := range [][]string{{"X-API-Key", key}, {"Authorization", "Bearer " + key}, {}} {
		url := urls["gateway"] + "/v2/jobs?job_type=parttime"
		if len(hdr) == 0 {
			url += "&api_key=" + key
		}
		resp := send(t, "GET", url, "", hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("GET with %v: %d", hdr, resp.StatusCode)
		}
		rids = append(rids, resp.Header.Get("X-Request-ID"))
	}
	// A bad key in the query form, too.
	bad := "svc_live_" + randomHex(20)
	send(t, "GET", urls["gateway"]+"/v2/jobs?api_key="+bad, "")
	gatewayTraces := map[string]string{} // request id → trace id
	for _, rid := range rids {
		tid, _ := traceOf(t, rid, func(spans []span) bool {
			for _, s := range spans {
				if s.Service == "jobs" && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
					return true
				}
			}
			return false
		})
		gatewayTraces[rid] = tid
	}
	time.Sleep(300 * time.Millisecond) // let the last batches arrive
	for _, s := range otlp.all() {
		// "api_key=" is the query form; the SQL of the key lookup names the api_keys table.
		for _, secret := range []string{key, bad, "api_key="} {
			if strings.Contains(s.Raw, secret) {
				t.Fatalf("span %s/%s carries %q:\n%s", s.Service, s.Name, secret, s.Raw)
			}
		}
	}

	seenAccess := 0
	for _, name := range []string{"gateway", "jobs", "directory"} {
		b, err := os.ReadFile(filepath.Join(logDir, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l == "" {
				continue
			}
			if strings.Contains(l, key) || strings.Contains(l, bad) || strings.Contains(l, "api_key=") {
				t.Fatalf("%s logged a key: %s", name, l)
			}
			if !logLine.MatchString(l) {
				t.Fatalf("%s: not a JSON line: %s", name, l)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: %v: %s", name, err, l)
			}
			rid, _ := m["request_id"].(string)
			if rid == "" {
				continue
			}
			tid, _ := m["trace_id"].(string)
			sid, _ := m["span_id"].(string)
			if len(tid) != 32 || len(sid) != 16 {
				t.Fatalf("%s: a request's line without trace_id/span_id: %s", name, l)
			}
			if want, ok := gatewayTraces[rid]; ok && name == "gateway" {
				seenAccess++
				if tid != want {
					t.Fatalf("access log trace %s, exported trace %s", tid, want)
				}
			}
		}
	}
	if seenAccess < len(rids) {
		t.Fatalf("%d access log lines of %d requests", seenAccess, len(rids))
	}
}

var routeLabel = regexp.MustCompile(`route="([^"]*)"`)

// Every service's /metrics is promlint clean, and routes are templates: an
// unknown path with ids in it becomes "unmatched", never a label of its own.
func TestMetricsPromlintCleanAndBounded(t *testing.T) {
	send(t, "GET", urls["gateway"]+"/v2/jobs/12345/nothing-here?api_key=x", "")
	send(t, "GET", urls["gateway"]+"/random-"+randomHex(4), "")
	for _, path := range []string{"/v2/blog", "/v2/events"} {
		if resp := send(t, "GET", urls["gateway"]+path, "", "X-API-Key", keys["trusted importer"]); resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	wants := map[string][]string{
		"gateway":     {"http_requests_total", "http_request_duration_seconds_bucket", "gateway_rate_limit_decisions_total", "pgxpool_acquires_total", "go_goroutines"},
		"jobs":        {"http_requests_total", "jobs_writes_total", "pgxpool_total_connections", "process_cpu_seconds_total"},
		"directory":   {"http_requests_total", "pgxpool_max_connections"},
		"content":     {"http_requests_total", "pgxpool_max_connections"},
		"community":   {"http_requests_total", "pgxpool_max_connections"},
		"jobs-worker": {"jobs_expired_total", "pgxpool_max_connections", "go_goroutines"},
	}
	for name, admin := range admins {
		status, text := scrape(t, admin)
		if status != 200 {
			t.Errorf("%s: /metrics answered %d", name, status)
		}
		problems, err := promlint.New(bytes.NewReader(text)).Lint()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s: promlint: %s: %s", name, p.Metric, p.Text)
		}
		for _, w := range wants[name] {
			if !bytes.Contains(text, []byte("\n"+w)) {
				t.Errorf("%s: no %s", name, w)
			}
		}
		for _, m := range routeLabel.FindAllStringSubmatch(string(text), -1) {
			r := m[1]
			if r != "unmatched" && (!strings.HasPrefix(r, "/") || strings.ContainsAny(r, "?=0123456789") && !strings.HasPrefix(r, "/v2")) {
				t.Errorf("%s: route label %q is not a template", name, r)
			}
			if strings.Contains(r, "12345") || strings.Contains(r, "random-") || strings.Contains(r, "nothing-here") {
				t.Errorf("%s: raw path %q became a label", name, r)
			}
		}
	}
}
