package suite

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewRequest builds a request bounded by ctx: a body that is not nil goes as
// JSON (hdr may say otherwise); hdr holds name, value pairs, and "Host" sets
// the request's host.
func NewRequest(ctx context.Context, method, url string, body []byte, hdr ...string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req, nil
}

// Body is the body NewRequest takes for text: none for "".
func Body(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// Do sends one request with key as its X-API-Key (none for "") and body as
// JSON (none for ""), and returns the status and the whole answer.
func Do(t testing.TB, method, url, key, body string) (int, []byte) {
	t.Helper()
	var hdr []string
	if key != "" {
		hdr = []string{"X-API-Key", key}
	}
	req, err := NewRequest(context.Background(), method, url, Body(body), hdr...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}
