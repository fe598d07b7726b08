package observability

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The paths of the burst: every service's routes, through the gateway and
// straight to each backend (which answers 401 without the gateway's
// identity), plus paths that match nothing.
var burstPaths = []string{
	"/v2", "/v2/health", "/v2/jobs", "/v2/jobs?city=1&limit=3", "/v2/jobs/unpublish", "/v2/vine/jobs",
	"/v2/cities", "/v2/spaces?limit=2", "/v2/city_spaces", "/v2/blog", "/v2/vine/blog",
	"/v2/events", "/v2/vine/events", "/v2/feedback", "/v2/newsletters/subscribe",
	"/v2/newsletters/confirm?token=nope", "/v2/nothing/12345", "/livez", "/readyz", "/%zz", "/",
}

// Methods a client may send, with the metric label each must end up under:
// odd, lower-case and long ones are OTHER, never a label of their own.
var burstMethods = map[string]string{
	"GET": "GET", "POST": "POST", "PUT": "PUT", "PATCH": "PATCH", "DELETE": "DELETE", "HEAD": "HEAD",
	"OPTIONS": "OPTIONS", "PROPFIND": "OTHER", "get": "OTHER", "GETT": "OTHER", "POS": "OTHER",
	strings.Repeat("X", 40): "OTHER",
}

var knownMethodLabels = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true,
	"HEAD": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "OTHER": true}

var routeTemplate = regexp.MustCompile(`^(unmatched|/[a-z0-9_/:.{}-]*)$`)

// rawRequest writes one HTTP/1.1 request on a kept-alive connection and reads
// the answer, so that methods net/http would refuse or rewrite go out as they
// are.
func rawRequest(conn net.Conn, rd *bufio.Reader, method, host, path, key, body string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host)
	if key != "" {
		fmt.Fprintf(&b, "X-API-Key: %s\r\n", key)
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(rd, &http.Request{Method: method})
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		return io.EOF // the server closed: the caller dials again
	}
	return err
}

// scrape reads a process's /metrics as Prometheus would.
func scrape(t *testing.T, admin string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, text
}

// A concurrent burst of mixed methods, paths and bodies through every
// service must leave every /metrics answering 200 with only known label
// values. Fiber's strings point into fasthttp's reused buffers unless the app
// is Immutable: label values kept from them were rewritten by later requests
// ("GETT", "POS"), and /metrics answered 500 for duplicate series.
func TestMetricsSurviveAConcurrentMixedBurst(t *testing.T) {
	// Not the trusted importer's key: the trace test wants that one's look-up
	// in PostgreSQL, not in the gateway's key cache.
	key := keys["live platform key"]
	if key == "" {
		t.Fatalf("no live platform key in %v", keys)
	}
	apis := map[string]bool{"gateway": true, "jobs": true, "directory": true, "content": true, "community": true}
	var targets []string
	for name := range apis {
		targets = append(targets, strings.TrimPrefix(urls[name], "http://"))
	}
	methods := make([]string, 0, len(burstMethods))
	for m := range burstMethods {
		methods = append(methods, m)
	}
	bodies := []string{"", `{}`, `{"message":"` + strings.Repeat("burst ", 30) + `"}`,
		`{"title":"` + strings.Repeat("x", 3000) + `","id_city":"5"}`, `not json`}

	const workers, perWorker = 16, 150
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			host := targets[w%len(targets)]
			var conn net.Conn
			var rd *bufio.Reader
			for i := 0; i < perWorker; i++ {
				if conn == nil {
					c, err := net.DialTimeout("tcp", host, 5*time.Second)
					if err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
						return
					}
					conn, rd = c, bufio.NewReader(c)
				}
				n := w*perWorker + i
				method := methods[n%len(methods)]
				body := bodies[(n/3)%len(bodies)]
				if method == "GET" || method == "HEAD" {
					body = ""
				}
				k := key
				if n%5 == 0 {
					k = "svc_live_" + strings.Repeat("0", 40) // a bad key
				}
				if err := rawRequest(conn, rd, method, host, burstPaths[(n/2)%len(burstPaths)], k, body); err != nil {
					conn.Close()
					conn = nil
				}
			}
			if conn != nil {
				conn.Close()
			}
		}(w)
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("dial failures: %v", failures)
	}

	for name, admin := range admins {
		status, text := scrape(t, admin)
		if status != 200 {
			t.Errorf("%s: /metrics answered %d after the burst:\n%.600s", name, status, text)
			continue
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			t.Errorf("%s: /metrics does not parse: %v", name, err)
			continue
		}
		seen := 0
		for _, fam := range families {
			for _, m := range fam.GetMetric() {
				for _, lp := range m.GetLabel() {
					v := lp.GetValue()
					if !model.LabelValue(v).IsValid() {
						t.Errorf("%s: %s{%s=%q}: not UTF-8", name, fam.GetName(), lp.GetName(), v)
					}
					switch lp.GetName() {
					case "method":
						seen++
						if !knownMethodLabels[v] {
							t.Errorf("%s: %s has method=%q", name, fam.GetName(), v)
						}
					case "status_class":
						if len(v) != 3 || v[0] < '1' || v[0] > '5' || v[1:] != "xx" {
							t.Errorf("%s: %s has status_class=%q", name, fam.GetName(), v)
						}
					case "route":
						if !routeTemplate.MatchString(v) || strings.Contains(v, "12345") {
							t.Errorf("%s: %s has route=%q", name, fam.GetName(), v)
						}
					}
				}
			}
		}
		if apis[name] && seen == 0 {
			t.Errorf("%s: no method label at all: the burst did not reach it", name)
		}
	}

	// Span attributes outlive the handler too (the batch exporter reads them
	// later): every HTTP span of the burst names a known method.
	time.Sleep(300 * time.Millisecond)
	for _, s := range otlp.all() {
		if m, ok := s.Attrs["http.request.method"]; ok && !knownMethodLabels[m] {
			t.Errorf("%s span %q has http.request.method=%q", s.Service, s.Name, m)
		}
	}
}

// A worker that cannot reach Temporal polls nothing: its admin /readyz says
// so (503 naming temporal), while /livez keeps it from being restarted.
func TestWorkerWithoutTemporalIsNotReady(t *testing.T) {
	admin := admins["jobs-worker"]
	for path, want := range map[string]int{"/readyz": 503, "/livez": 200} {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("jobs-worker %s: %d %q, want %d", path, resp.StatusCode, body, want)
		}
		if path == "/readyz" && (!strings.Contains(string(body), "temporal: down") || strings.Contains(string(body), "postgres")) {
			t.Fatalf("jobs-worker /readyz: %q, want only temporal down", body)
		}
	}
}
