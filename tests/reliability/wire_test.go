package reliability

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exchange sends raw bytes on a new connection — head at once, then body in
// the background (a server may answer and close before reading all of it) —
// and reads one response. It returns no reply (err set) when the server
// closed the connection without answering.
func exchange(addr, head string, body []byte) reply {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return reply{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		if _, err := io.WriteString(conn, head); err == nil && body != nil {
			_, _ = conn.Write(body)
		}
	}()
	return readReply(http.ReadResponse(bufio.NewReader(conn), nil))
}

func hostPort(base string) string { return strings.TrimPrefix(base, "http://") }

// Malformed HTTP on the wire (framing a client library would never send):
// every answer is a 4xx envelope, never a 500, and nothing is stored.
func TestMalformedHTTPOnTheWire(t *testing.T) {
	gw := hostPort(shared.URL["gateway"])
	k := newKey(t, shared, "-scopes", "write", "-trusted-importer")
	before := rowCounts(t)
	job := jobBody("Wire " + randomSuffix())
	post := func(extra, body string) string {
		return "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Type: application/json\r\n" + extra +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	for _, tc := range []struct{ name, raw string }{
		{"http2Preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"tlsHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"},
		{"headerWithoutColon", "GET /v2 HTTP/1.1\r\nHost: gw\r\nBadHeaderNoColon\r\n\r\n"},
		{"headerWithNUL", "GET /v2 HTTP/1.1\r\nHost: gw\r\nX-A: a\x00b\r\n\r\n"},
		{"lengthAndChunked", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"badChunkSize", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"},
		{"negativeLength", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Length: -1\r\n\r\n{}"},
		{"hugeLength", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Length: 99999999999999999999\r\n\r\n{}"},
		{"twoLengths", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x"},
		{"hugeHeader", "GET /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nX-Big: " + strings.Repeat("a", 20000) + "\r\n\r\n"},
		{"manyHeaders", "GET /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\n" + strings.Repeat("X-A: b\r\n", 3000) + "\r\n"},
		{"idempotencyKeyControl", post("Idempotency-Key: k\x01\x7f\r\n", job)},
		{"idempotencyKeyBadUTF8", post("Idempotency-Key: k\xff\r\n", job)},
		{"apiKeyBadBytes", "GET /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: svc_live_\xff\x01\r\n\r\n"},
		{"absoluteURI", "GET http://evil.example/v2/jobs HTTP/1.1\r\nHost: gw\r\n\r\n"},
		{"lowercaseMethod", "get /v2 HTTP/1.1\r\nHost: gw\r\n\r\n"},
		{"pathTraversal", "GET /v2/../../etc/passwd HTTP/1.1\r\nHost: gw\r\n\r\n"},
		{"http10NoHost", "GET /v2/blog HTTP/1.0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := exchange(gw, tc.raw, nil)
			if r.err != nil {
				t.Fatalf("no answer: %v", r.err)
			}
			if p := r.envelopeProblem(); p != "" || r.status >= 500 {
				t.Fatalf("%s: %s", p, r)
			}
			t.Logf("%d %s", r.status, r.code())
		})
	}
	after := rowCounts(t)
	for tb, n := range before {
		if after[tb] != n {
			t.Errorf("%s: %d rows before, %d after", tb, n, after[tb])
		}
	}
}

// Oversized bodies are a 413 payload_too_large envelope, whether the length
// is declared or the body is chunked, on a keyed and on a public route.
func TestOversizedBodies413(t *testing.T) {
	gw := hostPort(shared.URL["gateway"])
	k := key(t, importerKey)
	big := []byte(`{"title":"` + strings.Repeat("a", 2<<20) + `"}`)
	chunked := func(b []byte) []byte {
		var sb strings.Builder
		for len(b) > 0 {
			n := min(len(b), 64<<10)
			sb.WriteString(strconv.FormatInt(int64(n), 16) + "\r\n")
			sb.Write(b[:n])
			sb.WriteString("\r\n")
			b = b[n:]
		}
		sb.WriteString("0\r\n\r\n")
		return []byte(sb.String())
	}
	for _, tc := range []struct {
		name, head string
		body       []byte
	}{
		{"declaredKeyed", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n", big},
		{"declaredPublic", "POST /v2/feedback HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n", big},
		{"chunkedKeyed", "POST /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(big)},
		{"chunkedPublic", "POST /v2/feedback HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(big)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := exchange(gw, tc.head, tc.body)
			if r.status != 413 || r.code() != "payload_too_large" || r.envelopeProblem() != "" {
				t.Fatalf("want a 413 payload_too_large envelope: %s", r)
			}
		})
	}
}

// Slow clients are cut off by the server's timeouts: headers or a body
// dribbled a byte at a time never hold a connection open. The test asserts
// that the server closes the connection (while the client still has bytes to
// send), not how soon; 60 s is only a bound on the test.
func TestSlowClientsCutOff(t *testing.T) {
	gw := hostPort(shared.URL["gateway"])
	k := key(t, importerKey)
	for _, tc := range []struct {
		name, start, dribble string
	}{
		{"headers", "GET /v2/jobs HTTP/1.1\r\nHost: gw\r\nX-API-Key: " + k + "\r\n", strings.Repeat("X-Slow: y\r\n", 1000)},
		{"body", "POST /v2/feedback HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", `{"message":"` + strings.Repeat("a", 99_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", gw)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.start); err != nil {
				t.Fatal(err)
			}
			type result struct {
				b   []byte
				err error
			}
			closed := make(chan result, 1)
			go func() {
				_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
				b, err := io.ReadAll(conn) // returns when the server closes (or at the deadline)
				closed <- result{b, err}
			}()
			for i := 0; i < len(tc.dribble); i++ {
				select {
				case r := <-closed:
					var ne net.Error
					if errors.As(r.err, &ne) && ne.Timeout() {
						t.Fatalf("not cut off within the test's bound (%d bytes dribbled)", i)
					}
					if len(r.b) > 0 { // an answer before closing must be the envelope
						rep := readReply(http.ReadResponse(bufio.NewReader(bytes.NewReader(r.b)), nil))
						if p := rep.envelopeProblem(); p != "" || rep.status >= 500 {
							t.Fatalf("%s: %s", p, rep)
						}
						t.Logf("cut off with %d", rep.status)
					}
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conn.Write([]byte{tc.dribble[i]}); err != nil {
					return // the server closed the connection: cut off
				}
			}
			t.Fatalf("the server read %d dribbled bytes without cutting the client off", len(tc.dribble))
		})
	}
}
