package dashapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/api/jobsapi"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/dashbus"
)

// Backends are the directory's and the jobs service's internal answers the
// dashboard reads (docs/internal-api.md), and the jobs transitions it makes
// on a space's behalf through the same route as the API.
type Backends struct {
	DirectoryURL, JobsURL string
	Codec                 *identity.Codec
	HTTP                  *http.Client
}

// NewBackends returns the dashboard's client of the backends.
func NewBackends(directoryURL, jobsURL string, codec *identity.Codec, timeout time.Duration) *Backends {
	return &Backends{DirectoryURL: strings.TrimRight(directoryURL, "/"), JobsURL: strings.TrimRight(jobsURL, "/"), Codec: codec,
		HTTP: &http.Client{Timeout: timeout, Transport: otelhttp.NewTransport(http.DefaultTransport,
			otelhttp.WithPropagators(telemetry.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + routeOf(r.URL.Path) }))},
	}
}

// routeOf names a span by its route, not the ids in its path.
func routeOf(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			segs[i] = ":id"
		}
	}
	return strings.Join(segs, "/")
}

func (b *Backends) do(ctx context.Context, method, u string, id identity.Identity, body any, into any) (int, *web.Envelope, error) {
	hdr, err := b.Codec.Sign(id, 30*time.Second)
	if err != nil {
		return 0, nil, err
	}
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(identity.Header, hdr)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return 0, nil, unavailable(fmt.Errorf("%s %s: %w", method, routeOf(req.URL.Path), err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, err
	}
	var env web.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: %d, not an envelope", method, routeOf(req.URL.Path), resp.StatusCode)
	}
	if into != nil && resp.StatusCode < 300 {
		b, _ := json.Marshal(env.Data)
		if err := json.Unmarshal(b, into); err != nil {
			return resp.StatusCode, &env, err
		}
	}
	return resp.StatusCode, &env, nil
}

// backendError is a backend that did not answer as it should: the page
// says 503 and asks to retry; the cause is logged, not shown.
type backendError struct{ cause error }

func (e *backendError) Error() string { return e.cause.Error() }
func (e *backendError) Unwrap() error { return e.cause }

func unavailable(err error) error { return &backendError{cause: err} }

// pageError turns a backend failure into the 503 its page shows.
func pageError(err error, log interface {
	ErrorContext(ctx context.Context, msg string, args ...any)
}, ctx context.Context) error {
	var be *backendError
	if errors.As(err, &be) {
		log.ErrorContext(ctx, "dashboard backend", "error", be.cause.Error())
		return &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "The dashboard cannot reach a service it needs right now; try again in a moment"}
	}
	return err
}

func service() identity.Identity {
	return identity.Identity{Kind: identity.KindService, Service: "gateway"}
}

// AdminSpaces implements dashbus.Directory.
func (b *Backends) AdminSpaces(ctx context.Context, email string) ([]dashbus.Membership, error) {
	var out dirapi.AdminSpaces
	status, _, err := b.do(ctx, http.MethodGet, b.DirectoryURL+"/internal/admins/spaces?email="+url.QueryEscape(email), service(), nil, &out)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, unavailable(fmt.Errorf("directory admin spaces: %d", status))
	}
	ms := make([]dashbus.Membership, 0, len(out.Spaces))
	for _, s := range out.Spaces {
		ms = append(ms, dashbus.Membership{SpaceID: s.ID, Name: s.Name, Slug: s.Slug, Confirmed: s.Confirmed, IsPro: s.IsPro, Role: s.Role})
	}
	return ms, nil
}

// SpaceJobs lists a space's jobs in every status.
func (b *Backends) SpaceJobs(ctx context.Context, spaceID int64) ([]jobsapi.SpaceJob, error) {
	var out jobsapi.SpaceJobs
	status, _, err := b.do(ctx, http.MethodGet, b.JobsURL+"/internal/spaces/"+strconv.FormatInt(spaceID, 10)+"/jobs", service(), nil, &out)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, unavailable(fmt.Errorf("jobs of space: %d", status))
	}
	return out.Jobs, nil
}

// Transition sends a job event for space through POST /v2/jobs/{event}, as
// a live key of the space would: the jobs service applies the same rules
// (ownership, the state machine) as for the API. It returns the answer's
// status and, for a refusal, its message.
func (b *Backends) Transition(ctx context.Context, spaceID, jobID int64, event, clientIP, requestID string) (int, string, error) {
	id := identity.Identity{Kind: identity.KindLive, SpaceID: spaceID, Scopes: []string{"jobs:write"}, ClientIP: clientIP, RequestID: requestID}
	status, env, err := b.do(ctx, http.MethodPost, b.JobsURL+"/v2/jobs/"+event, id, map[string]int64{"job_id": jobID}, nil)
	if err != nil {
		return 0, "", err
	}
	msg := ""
	if env != nil && env.Error != nil {
		msg = env.Error.Message
	}
	return status, msg, nil
}
