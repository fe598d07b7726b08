package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/api/client"
)

// checkedDoer sends the generated client's requests and checks every answer
// against the OpenAPI document, as call does for hand-written requests.
type checkedDoer struct{ t *testing.T }

func (d checkedDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if err := checker.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
		d.t.Errorf("contract: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp, nil
}

// sdk is the client generated from api/openapi.yaml, talking to the gateway
// with key in the given way ("header", "bearer" or "query"): the document's
// three security schemes.
func sdk(t *testing.T, key, via string) *client.ClientWithResponses {
	t.Helper()
	auth := func(_ context.Context, req *http.Request) error {
		switch via {
		case "header":
			req.Header.Set("X-API-Key", key)
		case "bearer":
			req.Header.Set("Authorization", "Bearer "+key)
		case "query":
			q := req.URL.Query()
			q.Set("api_key", key)
			req.URL.RawQuery = q.Encode()
		}
		return nil
	}
	c, err := client.NewClientWithResponses(s.gateway, client.WithHTTPClient(checkedDoer{t}), client.WithRequestEditorFn(auth))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The main flow driven only through the generated client: if the generator
// cannot express a request or decode an answer, the document is wrong.
func TestGeneratedClientMainFlow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pro := sdk(t, key(t, proSpaceKey), "header")

	// Resolve a city.
	cities, err := pro.ListCitiesWithResponse(ctx, &client.ListCitiesParams{Search: new("berl")})
	if err != nil {
		t.Fatal(err)
	}
	if cities.JSON200 == nil || len(cities.JSON200.Data) == 0 || cities.JSON200.Data[0].CitySlug != "berlin" {
		t.Fatalf("resolve city: %d %s", cities.StatusCode(), cities.Body)
	}
	cityID, err := strconv.Atoi(cities.JSON200.Data[0].IdCity)
	if err != nil {
		t.Fatalf("id_city %q is not numeric text", cities.JSON200.Data[0].IdCity)
	}

	// Create a job with an Idempotency-Key.
	title := "SDK Community Manager " + randomHex(3)
	body := client.JobCreateRequest{
		Title:       title,
		Company:     "Factory",
		Description: "<p>Run our <strong>events</strong></p>",
		JobType:     "FullTime", // any case (JobTypeInput); answers are lower case
		Tags:        "Events, community",
		IdCity:      &cityID,
		ExternalUrl: new("https://example.org/jobs/sdk?x=1"),
		SalMin:      new(40000),
		SalMax:      new(52000),
	}
	idem := &client.CreateJobParams{IdempotencyKey: new("sdk-" + randomHex(8))}
	created, err := pro.CreateJobWithResponse(ctx, idem, body)
	if err != nil {
		t.Fatal(err)
	}
	if created.JSON201 == nil {
		t.Fatalf("create: %d %s", created.StatusCode(), created.Body)
	}
	job := created.JSON201.Data
	if job.Action != client.JobCreateResultActionCreated || job.Status != client.JobCreateResultStatusActive || job.City.Id != cityID ||
		job.City.Name != "Berlin" || job.ViewUrl == nil {
		t.Fatalf("creation result: %s", created.Body)
	}
	if created.HTTPResponse.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a first request is marked as a replay")
	}

	// It is listed (read with the Bearer scheme this time).
	if !sdkListed(ctx, t, sdk(t, key(t, proSpaceKey), "bearer"), job.JobId) {
		t.Fatal("created job not listed")
	}

	// The same request with the same key replays the stored answer.
	replay, err := pro.CreateJobWithResponse(ctx, idem, body)
	if err != nil {
		t.Fatal(err)
	}
	if replay.JSON201 == nil || replay.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s (header %q)", replay.StatusCode(), replay.Body, replay.HTTPResponse.Header.Get("Idempotent-Replayed"))
	}
	if !sameJSON(t, replay.JSON201.Data, job) {
		t.Fatalf("replay differs:\n%s\n%s", replay.Body, created.Body)
	}

	// Unpublish it (the api_key query scheme): it leaves the listing.
	un, err := sdk(t, key(t, proSpaceKey), "query").UnpublishJobWithResponse(ctx, client.UnpublishJobJSONRequestBody{JobId: job.JobId})
	if err != nil {
		t.Fatal(err)
	}
	if un.JSON200 == nil || un.JSON200.Data.Action != client.Unpublished || un.JSON200.Data.Status != client.JobUnpublishResultStatusExpired {
		t.Fatalf("unpublish: %d %s", un.StatusCode(), un.Body)
	}
	if sdkListed(ctx, t, pro, job.JobId) {
		t.Fatal("unpublished job still listed")
	}

	// Errors decode into the documented envelopes too.
	bad, err := pro.CreateJobWithResponse(ctx, nil, client.JobCreateRequest{Title: title, JobType: "gig", IdCity: &cityID})
	if err != nil {
		t.Fatal(err)
	}
	if bad.JSON422 == nil || bad.JSON422.Error.Message != "Validation failed" || len(bad.JSON422.Error.Details) == 0 {
		t.Fatalf("validation: %d %s", bad.StatusCode(), bad.Body)
	}
}

func sdkListed(ctx context.Context, t *testing.T, c *client.ClientWithResponses, id int) bool {
	t.Helper()
	list, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{City: new("berlin")})
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil {
		t.Fatalf("list: %d %s", list.StatusCode(), list.Body)
	}
	if list.JSON200.Data.Total != len(list.JSON200.Data.Jobs) {
		t.Fatalf("total %d for %d jobs without pagination", list.JSON200.Data.Total, len(list.JSON200.Data.Jobs))
	}
	for _, j := range list.JSON200.Data.Jobs {
		if j.IdJob == id {
			return true
		}
	}
	return false
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}
