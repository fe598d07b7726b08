// Package indexing sends the search-engine notices (Google's Indexing API)
// from jobs-worker: a dispatch loop turns job_events into indexing_notices
// rows (indexdb), a send loop posts them in batches within the day's quota.
//
// A plain loop over PostgreSQL rather than Temporal workflows: a batch
// gathers notices of many jobs and every batch draws on one daily quota, so
// the rows (claimed under the quota row's lock) are the state and the
// schedule both; a workflow per notice or per batch would add nothing the
// table does not already keep across a restart.
package indexing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/indexbus"
)

// DefaultBaseURL is Google's; a test (or a proxy) sets its own.
const DefaultBaseURL = "https://indexing.googleapis.com"

// Scope is the OAuth2 scope of the Indexing API.
const Scope = "https://www.googleapis.com/auth/indexing"

// MaxBatch is the most requests the API takes in one batch call.
const MaxBatch = 100

// PublishPath is the request each part of a batch makes.
const PublishPath = "/v3/urlNotifications:publish"

// Client posts batches of notices to the Indexing API.
type Client struct {
	BaseURL string
	HTTP    *http.Client // authorizes its requests
}

// NewClient reads a service-account JSON key: its access tokens come from
// the key's token_uri (oauth2/google signs the JWT assertion, the token is
// reused until it expires), so a fake can serve the token and the batch
// endpoints both. timeout bounds a token request and a batch call.
func NewClient(key []byte, baseURL string, timeout time.Duration) (*Client, error) {
	conf, err := google.JWTConfigFromJSON(key, Scope)
	if err != nil {
		return nil, fmt.Errorf("indexing credential: %w", err)
	}
	// the token source outlives any request: its context only carries the
	// HTTP client of the token requests
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Timeout: timeout})
	hc := conf.Client(ctx)
	hc.Timeout = timeout
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: hc}, nil
}

// Send posts one batch (at most MaxBatch notices) and answers one outcome
// per notice. A call that fails as a whole (no answer, 429, 5xx, a token
// refused) retries every notice; in an answered batch each part's own
// status decides: 2xx sent, 429 and 5xx retried, other 4xx final.
func (c *Client) Send(ctx context.Context, batch []indexbus.Notice) []indexbus.Outcome {
	outs := make([]indexbus.Outcome, len(batch))
	fail := func(err error) []indexbus.Outcome {
		for i := range outs {
			outs[i] = indexbus.Outcome{Retry: true, Err: err.Error()}
		}
		return outs
	}
	if len(batch) > MaxBatch {
		return fail(fmt.Errorf("batch of %d notices, at most %d", len(batch), MaxBatch))
	}
	body, ctype, err := encodeBatch(batch)
	if err != nil {
		return fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/batch", bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fail(fmt.Errorf("batch call: %s: %s", resp.Status, bytes.TrimSpace(msg)))
	}
	statuses, err := decodeBatch(resp)
	if err != nil {
		return fail(err)
	}
	for i := range batch {
		st, ok := statuses[partID(i)]
		switch {
		case !ok:
			outs[i] = indexbus.Outcome{Retry: true, Err: "no answer to this notice in the batch"}
		case st.code >= 200 && st.code < 300:
			outs[i] = indexbus.Outcome{OK: true, Counted: true}
		case st.code == http.StatusTooManyRequests:
			outs[i] = indexbus.Outcome{Retry: true, Err: st.text}
		default:
			outs[i] = indexbus.Outcome{Retry: st.code >= 500, Counted: true, Err: st.text}
		}
	}
	return outs
}

func partID(i int) string { return "notice-" + strconv.Itoa(i) }

// encodeBatch writes the batch as Google documents it: multipart/mixed,
// each part an application/http request POST /v3/urlNotifications:publish
// with the JSON {url, type}.
func encodeBatch(batch []indexbus.Notice) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i, n := range batch {
		payload, err := json.Marshal(struct {
			URL  string `json:"url"`
			Type string `json:"type"`
		}{n.URL, n.Type})
		if err != nil {
			return nil, "", err
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", "application/http")
		h.Set("Content-Transfer-Encoding", "binary")
		h.Set("Content-ID", "<"+partID(i)+">")
		p, err := w.CreatePart(h)
		if err != nil {
			return nil, "", err
		}
		fmt.Fprintf(p, "POST %s HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n\r\n%s",
			PublishPath, len(payload), payload)
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), "multipart/mixed; boundary=" + w.Boundary(), nil
}

type partStatus struct {
	code int
	text string
}

// decodeBatch reads each part's HTTP status by the Content-ID it answers
// (Google's "<response-ID>").
func decodeBatch(resp *http.Response) (map[string]partStatus, error) {
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("batch answer: not multipart (%q)", resp.Header.Get("Content-Type"))
	}
	r := multipart.NewReader(io.LimitReader(resp.Body, 4<<20), params["boundary"])
	out := map[string]partStatus{}
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("batch answer: %w", err)
		}
		id := strings.TrimSuffix(strings.TrimPrefix(p.Header.Get("Content-ID"), "<"), ">")
		id = strings.TrimPrefix(id, "response-")
		pr, err := http.ReadResponse(bufio.NewReader(p), nil)
		if err != nil {
			return nil, fmt.Errorf("batch answer part %q: %w", id, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(pr.Body, 512))
		pr.Body.Close()
		text := pr.Status
		if pr.StatusCode >= 300 {
			text += ": " + string(bytes.TrimSpace(msg))
		}
		out[id] = partStatus{code: pr.StatusCode, text: text}
	}
}
