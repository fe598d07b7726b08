package suite

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
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
