package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/stdwebhook"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/jobapp"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus/stores/hookdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// maxLogged is how much of an answer the delivery log keeps.
const maxLogged = 1024

// Activities are the webhook workflow's activities and what they need.
type Activities struct {
	Store  *hookdb.Store
	Jobs   *jobbus.Business
	Client *outbound.Client
	Mail   mailer.Sender // for MailDisabled
	Log    *slog.Logger
	Now    func() time.Time // nil: time.Now
	// idle overrides pumpIdle (tests).
	idle time.Duration
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// message is the body of a delivery (WebhookMessage in the document).
type message struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Body renders a delivery: the job as GET /v2/jobs/{id_job} shows it to the
// endpoint's owner now, with the event.
func (a *Activities) Body(ctx context.Context, t hookdb.Target) ([]byte, error) {
	bs, err := a.bodies(ctx, t.Endpoint, []hookbus.Delivery{t.Delivery})
	if err != nil {
		return nil, err
	}
	return bs[0], nil
}

// bodies renders deliveries to one endpoint, the jobs read in one query.
func (a *Activities) bodies(ctx context.Context, ep hookbus.Endpoint, ds []hookbus.Delivery) ([][]byte, error) {
	who := jobbus.Caller{KeyID: ep.KeyID, SpaceID: ep.SpaceID}
	var evs []jobbus.JobEvent
	for _, d := range ds {
		if d.Type != hookbus.TypePing {
			ev := jobbus.JobEvent{ID: d.MsgID, JobID: d.JobID, Type: d.Type, Version: d.Version, OccurredAt: d.OccurredAt}
			if d.EventID != nil {
				ev.ID = *d.EventID
			}
			evs = append(evs, ev)
		}
	}
	var entries []jobbus.ChangeEntry
	if len(evs) > 0 {
		var err error
		if entries, err = a.Jobs.Entries(ctx, who, evs); err != nil {
			return nil, err
		}
	}
	out := make([][]byte, len(ds))
	for i, d := range ds {
		data := json.RawMessage(`{}`)
		if d.Type != hookbus.TypePing {
			var err error
			if data, err = jobapp.ChangeJSON(a.Jobs, entries[0], who); err != nil {
				return nil, err
			}
			entries = entries[1:]
		}
		b, err := json.Marshal(message{ID: d.MsgID, Type: d.Type, Timestamp: d.OccurredAt.UTC().Truncate(time.Millisecond), Data: data})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// Next returns the (endpoint, job)'s oldest pending delivery.
func (a *Activities) Next(ctx context.Context, in Input) (Next, error) {
	id, found, err := a.Store.NextPending(ctx, in.EndpointID, in.JobID)
	return Next{DeliveryID: id, Found: found}, err
}

// Attempt makes one attempt of a delivery and records it.
func (a *Activities) Attempt(ctx context.Context, in AttemptInput) (Outcome, error) {
	defer heartbeat(ctx)()
	t, err := a.Store.Target(ctx, in.DeliveryID)
	switch {
	case errors.Is(err, hookbus.ErrNotFound): // the endpoint was deleted
		return Outcome{Done: true}, nil
	case err != nil:
		return Outcome{}, err
	case t.Delivery.Status != "pending":
		return Outcome{Done: true}, nil
	case !t.Endpoint.Enabled:
		why := "the endpoint is disabled"
		if t.Endpoint.DisabledReason != nil {
			why += ": " + *t.Endpoint.DisabledReason
		}
		return Outcome{Done: true}, a.Store.Skip(ctx, in.DeliveryID, why)
	}
	body, err := a.Body(ctx, t)
	if err != nil {
		return Outcome{}, err
	}
	at, ans := a.send(ctx, t.Endpoint.URL, t.Delivery.MsgID, body, secrets(t.Secret, t.OldSecret))
	switch ans {
	case answerOK:
		if err := a.record(ctx, in.DeliveryID, "succeeded", at, 0); err != nil {
			return Outcome{}, err
		}
		return Outcome{Done: true}, a.Store.Succeeded(ctx, t.Endpoint.ID)
	case answerGone:
		if err := a.record(ctx, in.DeliveryID, "failed", at, 0); err != nil {
			return Outcome{}, err
		}
		_, err := a.disable(ctx, t, goneReason(a.now()))
		return Outcome{Done: true}, err
	}
	return a.failed(ctx, t, in, at)
}

func secrets(secret, old string) []string {
	if old != "" {
		return []string{secret, old}
	}
	return []string{secret}
}

func goneReason(now time.Time) string {
	return "the endpoint answered 410 Gone at " + now.UTC().Format(time.RFC3339) + "; re-enable it with PATCH {\"enabled\": true}"
}

// answer is how an attempt went.
type answer int

const (
	answerFailed answer = iota // retried
	answerOK                   // 2xx
	answerGone                 // 410: the endpoint is disabled
)

// send makes one signed request of body to url and says how it went.
func (a *Activities) send(ctx context.Context, url, msgID string, body []byte, secrets []string) (Attempt, answer) {
	hs, err := stdwebhook.Headers(msgID, a.now(), body, secrets...)
	if err != nil {
		return Attempt{Error: "signing: " + err.Error()}, answerFailed
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Attempt{Error: "bad url: " + err.Error()}, answerFailed
	}
	for k, v := range hs {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "coworkjobs-webhooks/1")
	start := time.Now()
	resp, err := a.Client.Do(ctx, req)
	ms := int(time.Since(start).Milliseconds())
	at := Attempt{LatencyMS: &ms}
	if err != nil {
		at.Error = outbound.Describe(err) // the owner reads it: no resolver or dialled address
		return at, answerFailed
	}
	at.Status, at.Body = &resp.Status, logged(resp.Body)
	switch {
	case resp.Status >= 200 && resp.Status < 300:
		return at, answerOK
	case resp.Status == http.StatusGone:
		at.Error = "the endpoint answered 410 Gone: it is disabled"
		return at, answerGone
	}
	at.Error = "the endpoint answered " + strconv.Itoa(resp.Status)
	return at, answerFailed
}

// heartbeat tells Temporal the attempt's worker is alive until the returned
// stop is called (outside an activity, as in unit tests, it does nothing).
func heartbeat(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(HeartbeatTimeout / 4)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

// Attempt is an attempt's outcome before it is recorded.
type Attempt struct {
	Status    *int
	Body      *string
	LatencyMS *int
	Error     string
}

// failed records a failed attempt: retried after in.NextIn, unless it was
// the last or the endpoint has now failed for DisableAfter (then disabled,
// and its owner told when there is an address).
func (a *Activities) failed(ctx context.Context, t hookdb.Target, in AttemptInput, at Attempt) (Outcome, error) {
	since, err := a.Store.Failed(ctx, t.Endpoint.ID)
	if err != nil {
		return Outcome{}, err
	}
	failingSince := time.Unix(since, 0)
	if a.now().Sub(failingSince) >= DisableAfter {
		if err := a.record(ctx, in.DeliveryID, "failed", at, 0); err != nil {
			return Outcome{}, err
		}
		_, err := a.disable(ctx, t, fmt.Sprintf("every delivery failed from %s for %d days (last: %s); re-enable it with PATCH {\"enabled\": true}",
			failingSince.UTC().Format(time.RFC3339), int(DisableAfter.Hours()/24), at.Error))
		return Outcome{Done: true}, err
	}
	if in.NextIn == 0 {
		at.Error += fmt.Sprintf("; given up after %d hours of retries", int(RetryFor.Hours()))
		return Outcome{Done: true}, a.record(ctx, in.DeliveryID, "failed", at, 0)
	}
	return Outcome{}, a.record(ctx, in.DeliveryID, "pending", at, in.NextIn)
}

func (a *Activities) record(ctx context.Context, id int64, status string, at Attempt, next time.Duration) error {
	r := hookdb.Attempt{DeliveryID: id, Status: status, ResponseStatus: at.Status, ResponseBody: at.Body, LatencyMS: at.LatencyMS}
	if at.Error != "" {
		e := truncate(at.Error, 1000)
		r.Error = &e
	}
	if next > 0 {
		u := a.now().Add(next).Unix()
		r.NextTryAt = &u
	}
	return a.Store.Record(ctx, r)
}

// disable turns the endpoint off with reason; its owner's mail (when it
// has an address) is queued with the change and sent by MailDisabled.
func (a *Activities) disable(ctx context.Context, t hookdb.Target, reason string) (bool, error) {
	return a.Store.Disable(ctx, t.Endpoint.ID, reason)
}

// MailDisabled sends a queued mail about a disabled endpoint (the
// Deliver of an outbox.Relay over hookdb's MailOutbox: an error retries it).
func (a *Activities) MailDisabled(ctx context.Context, m outbox.Message[hookdb.DisabledMail]) error {
	d := m.Payload
	return a.Mail.Send(ctx, mailer.Message{To: d.Email, Subject: "coworkjobs: your webhook endpoint was disabled",
		Text: "The webhook endpoint " + d.URL + " (id " + strconv.FormatInt(d.EndpointID, 10) + ") was disabled: " + d.Reason +
			".\n\nNo more events are sent to it until it is enabled again; POST /v2/webhooks/{id}/recover sends the events it missed.\n"})
}

// logged is the part of an answer the log keeps: its first KiB as text.
func logged(b []byte) *string {
	if len(b) > maxLogged {
		b = b[:maxLogged]
	}
	s := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
	return &s
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
