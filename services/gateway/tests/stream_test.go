package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// bigEnvelope is a success envelope of about kb<<10 bytes whose content
// depends on every position, so that a lost, repeated or reordered piece
// shows.
func bigEnvelope(kb int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"success":true,"status":200,"data":{"lines":[`)
	for i := 0; b.Len() < kb<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"line %08d"`, i)
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// startBigBackend answers GET /v2/... with bigEnvelope(?kb=), sized, or
// chunked in pieces of 8<<10 bytes with ?chunked=1 (as the jobs list is
// sent). Each finished chunked answer reports whether the whole body was
// written.
func startBigBackend(t *testing.T) (string, chan bool) {
	t.Helper()
	finished := make(chan bool, 16)
	return signedBackend(t, "big", func(c *fiber.Ctx) error {
		kb, _ := strconv.Atoi(c.Query("kb"))
		body := bigEnvelope(kb)
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		if c.Query("chunked") != "1" {
			return c.Send(body)
		}
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			for off := 0; off < len(body); off += 8 << 10 {
				if _, err := w.Write(body[off:min(off+8<<10, len(body))]); err != nil {
					finished <- false
					return
				}
				if err := w.Flush(); err != nil {
					finished <- false
					return
				}
			}
			finished <- true
		})
		return nil
	}), finished
}

// Answers of every size arrive whole and unchanged, sized or chunked, small
// ones read whole by the gateway and large ones streamed, and the pooled
// backend connections stay usable in any order. (A client that hangs up in
// the middle of a stream is tested beside the proxy, where nothing else
// touches the connection pool.)
func TestAnswersOfEverySizeArriveWhole(t *testing.T) {
	backend, finished := startBigBackend(t)
	g := startGateway(t, gatewayOpts{backendURL: backend, timeout: 10 * time.Second})
	_, raw := g.newKey(t, keybus.NewKey{Scopes: []string{"write"}, RateLimitPerMinute: 1000})
	// POST: the proxy retries a GET that meets a broken pooled connection,
	// never a POST, so leftovers on a connection would show as a failure.
	get := func(query string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, g.base+"/v2/jobs?"+query, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", raw)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", query, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: read: %v", query, err)
		}
		return resp.StatusCode, b
	}
	check := func(query string, kb int) {
		t.Helper()
		status, b := get(query)
		if want := bigEnvelope(kb); status != http.StatusOK || !bytes.Equal(b, want) {
			t.Fatalf("POST %s: status %d, %d bytes (want %d), starts %.80q", query, status, len(b), len(want), b)
		}
	}
	for _, kb := range []int{1, 60, 100, 3 << 10} {
		check("kb="+strconv.Itoa(kb), kb)
		check("chunked=1&kb="+strconv.Itoa(kb), kb)
		if !<-finished {
			t.Fatalf("the backend could not finish a chunked answer of kb=%d", kb)
		}
	}

	// Sized and chunked answers in turns over the same pooled connections.
	for i := range 20 {
		if i%2 == 0 {
			check("kb=100", 100)
		} else {
			check("chunked=1&kb=70", 70)
			<-finished
		}
	}
}
