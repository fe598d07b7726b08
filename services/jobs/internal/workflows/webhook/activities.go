package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/stdwebhook"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/hookbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobview"
)

// maxLogged is how much of an answer the delivery log keeps.
const maxLogged = 1024

// Activities are the webhook workflow's activities and what they need.
type Activities struct {
	Store   hookbus.DeliveryStorer
	Readers eventbus.Storer // the endpoints' positions in the event log
	Jobs    *jobbus.Business
	// Render renders the bodies, each event once for every endpoint that
	// reads it (nil: one is made over Jobs).
	Render *jobview.Renderer
	Client *outbound.Client
	Mail   mailer.Sender // for MailDisabled
	Log    *slog.Logger
	Now    func() time.Time // nil: time.Now
	// idle overrides pumpIdle (tests).
	idle time.Duration
	once sync.Once
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

// renderer is Render, made over Jobs when nil.
func (a *Activities) renderer() *jobview.Renderer {
	a.once.Do(func() {
		if a.Render == nil {
			a.Render = &jobview.Renderer{Jobs: a.Jobs}
		}
	})
	return a.Render
}

// render is the data of each event for the endpoint's owner.
func (a *Activities) render(ctx context.Context, ep hookbus.Endpoint, evs []jobbus.JobEvent) ([]json.RawMessage, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	return a.renderer().Changes(ctx, jobbus.Caller{KeyID: ep.KeyID, SpaceID: ep.SpaceID}, evs)
}

// bodies renders delivery rows to one endpoint (a ping's data is {}).
func (a *Activities) bodies(ctx context.Context, ep hookbus.Endpoint, ds []hookbus.Delivery) ([][]byte, error) {
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
	data, err := a.render(ctx, ep, evs)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(ds))
	for i, d := range ds {
		body := json.RawMessage(`{}`)
		if d.Type != hookbus.TypePing {
			body, data = data[0], data[1:]
		}
		b, err := messageBody(d.MsgID, d.Type, d.OccurredAt, body)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
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

// MailDisabled sends a queued mail about a disabled endpoint (the
// Deliver of an outbox.Relay over hookdb's MailOutbox: an error retries it).
func (a *Activities) MailDisabled(ctx context.Context, m outbox.Message[hookbus.DisabledMail]) error {
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
