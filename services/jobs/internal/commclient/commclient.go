// Package commclient calls community's internal privacy routes
// (docs/internal-api.md) with a signed service identity: an address's
// erasure and export, the address sealed (libs/privacy).
package commclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
)

// ErrUnavailable is community not answering, or answering other than 200.
var ErrUnavailable = errors.New("community unavailable")

// Client is community's internal privacy API.
type Client struct {
	base  string
	codec *identity.Codec
	http  *http.Client
}

// New returns a client of community at baseURL (COMMUNITY_URL).
func New(baseURL string, codec *identity.Codec, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), codec: codec, http: &http.Client{Timeout: timeout,
		Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithPropagators(telemetry.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }))}}
}

// Erase erases the sealed address in community (idempotent).
func (c *Client) Erase(ctx context.Context, token string) (json.RawMessage, error) {
	return c.post(ctx, "/internal/privacy/erase", token)
}

// Export is what community holds about the sealed address.
func (c *Client) Export(ctx context.Context, token string) (json.RawMessage, error) {
	return c.post(ctx, "/internal/privacy/export", token)
}

func (c *Client) post(ctx context.Context, path, token string) (json.RawMessage, error) {
	h, err := c.codec.Sign(identity.Identity{Kind: identity.KindService, Service: "jobs"}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]string{"token": token})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("community request: %w", err)
	}
	req.Header.Set(identity.Header, h)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: POST %s: %w", ErrUnavailable, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnavailable, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: POST %s answered %d", ErrUnavailable, path, resp.StatusCode)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || len(env.Data) == 0 {
		return nil, fmt.Errorf("%w: decode %s", ErrUnavailable, path)
	}
	return env.Data, nil
}
