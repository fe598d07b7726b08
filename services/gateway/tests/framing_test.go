package tests

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request framed two ways (Content-Length and Transfer-Encoding) is
// refused and its connection closed: a proxy in front that read the other
// framing would take the bytes after it for the start of its next request,
// and whatever the gateway parsed from them as a request of its own would
// be answered to someone else (request smuggling, RFC 9112 6.1).
func TestAmbiguousFramingClosesTheConnection(t *testing.T) {
	g := startGateway(t, gatewayOpts{})
	addr := strings.TrimPrefix(g.base, "http://")
	smuggled := "GET /v2 HTTP/1.1\r\nHost: x\r\n\r\n"
	for name, headers := range map[string]string{
		"lengthFirst":   "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
		"encodingFirst": "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			req := "POST /v2/feedback HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n0\r\n\r\n" + smuggled
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			rd := bufio.NewReader(conn)
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(echoHeader) != "" {
				t.Fatalf("first answer: %d (from the backend: %q) %s, want the gateway's 400", resp.StatusCode, resp.Header.Get(echoHeader), body)
			}
			if second, err := http.ReadResponse(rd, nil); err == nil {
				b, _ := io.ReadAll(second.Body)
				second.Body.Close()
				t.Fatalf("a second answer on the same connection: %d (%d bytes)", second.StatusCode, len(b))
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("after the 400: %v, want the connection closed (EOF)", err)
			}
		})
	}
}
