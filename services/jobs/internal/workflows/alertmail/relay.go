// Package alertmail matches job alerts off the request's path and mails
// them: a loop reads job_events past the alerts' own position (the reader
// "alerts" of the consumer kit, eventbus; the store's Match handles a batch),
// and an outbox relay (libs/outbox) starts one Temporal workflow per mail
// (confirmation, instant match, digest) whose activity sends it, retrying
// while SMTP is away, as jobmail does. Daily and weekly digests are queued by
// DigestClockWorkflow: workflow timers, not a schedule (its comment says why).
package alertmail

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/eventbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Reader is the alert matcher's reader of the event log (eventbus).
const Reader = "alerts"

// MatchBatch is how many job events one batch of the matcher reads.
const MatchBatch = 500

// Relay matches and mails.
type Relay struct {
	Store    alertbus.MailStorer
	Readers  eventbus.Storer // the event log's readers
	Starter  Starter         // where deliver hands the mails
	Signer   *alertbus.Signer
	Privacy  *privacy.Sealer // the erasure link of every mail (erasure.go)
	Jobs     *jobbus.Business
	Mail     mailer.Sender
	Log      *slog.Logger
	Metrics  *outbox.Metrics // nil: not counted
	Interval time.Duration   // default outbox.DefaultInterval
}

// Parse is a stored search's filter, by the listing's own validation.
func Parse(search string) (jobbus.ListFilter, bool) {
	q, err := url.ParseQuery(search)
	if err != nil {
		return jobbus.ListFilter{}, false
	}
	f, p := jobbus.ParseQuery(q.Get)
	return f, len(p) == 0
}

func (r *Relay) relay() *outbox.Relay[alertbus.OutboxItem] {
	return &outbox.Relay[alertbus.OutboxItem]{Table: r.Store.OutboxTable(), Deliver: r.deliver, Log: r.Log, Metrics: r.Metrics,
		Interval: r.Interval}
}

// Run matches and relays until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { r.match(ctx) })
	err := r.relay().Run(ctx)
	wg.Wait()
	return err
}

func (r *Relay) match(ctx context.Context) {
	every := r.Interval
	if every <= 0 {
		every = outbox.DefaultInterval
	}
	lastPurge := time.Time{}
	for {
		_, err := r.MatchOnce(ctx) // reads until it has caught up
		wait := every
		if err != nil && ctx.Err() == nil {
			r.Log.Warn("alert matching", "error", err)
		}
		if time.Since(lastPurge) > time.Hour {
			if _, err := r.Store.PurgeUnconfirmed(ctx); err != nil && ctx.Err() == nil {
				r.Log.Warn("alert purge", "error", err)
			}
			lastPurge = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// MatchOnce matches the events past the matcher's position until it has
// caught up, and reports the events read. Several workers take turns (the
// reader's lease).
func (r *Relay) MatchOnce(ctx context.Context) (int, error) {
	run := &eventbus.Runner{Store: r.Readers, Reader: Reader, Batch: MatchBatch,
		Handle: func(ctx context.Context, evs []jobbus.JobEvent) error {
			_, err := r.Store.Match(ctx, evs, Parse)
			return err
		}}
	out, err := run.Run(ctx, owner)
	return out.Handled, err
}

// owner names this process in the reader's lease.
var owner = fmt.Sprintf("alerts-%d-%x", os.Getpid(), rand.Uint64()) //nolint:gosec // G404: a name, not a secret

// RelayOnce relays the due mails once (tests).
func (r *Relay) RelayOnce(ctx context.Context) (outbox.Result, error) {
	return r.relay().RunOnce(ctx)
}

// deliver hands one mail to Temporal (AlertMailWorkflow, whose activity
// sends it, retrying while SMTP is away).
func (r *Relay) deliver(ctx context.Context, m outbox.Message[alertbus.OutboxItem]) error {
	return r.Starter.StartMail(ctx, MailInput{OutboxID: m.ID, AlertID: m.Payload.AlertID, Kind: m.Payload.Kind,
		JobID: m.Payload.JobID, DigestAt: m.Payload.DigestAt})
}

// Link is an alert's public link of purpose: alertapp's page, whose GET
// only shows a button (a link scanner's fetch changes nothing).
func (r *Relay) Link(path, purpose string, a alertbus.Alert) string {
	return r.Jobs.BaseURL() + "/alerts/" + path + "?token=" + url.QueryEscape(r.Signer.Token(purpose, a))
}

// Describe is a search in words, for the mails' subjects.
func Describe(search string) string {
	q, _ := url.ParseQuery(search)
	var parts []string
	for _, k := range alertbus.SearchParams {
		if v := q.Get(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// ConfirmMail asks the address's owner to confirm its pending searches,
// one link each. The address has confirmed nothing: a search is told by
// alertbus.Summary (what it matches by), never by the text as typed.
func (r *Relay) ConfirmMail(pending []alertbus.Alert) mailer.Message {
	var text, html strings.Builder
	text.WriteString("Hello,\n\nsomeone (we hope you) asked for mails about new jobs on coworkjobs. Confirm each search you want:\n")
	html.WriteString("<p>Hello,</p><p>someone (we hope you) asked for mails about new jobs on coworkjobs. Confirm each search you want:</p><ul>")
	for _, a := range pending {
		what := "(a search)"
		if f, ok := Parse(a.Search); ok {
			what = alertbus.Summary(f)
		}
		link := r.Link("confirm", alertbus.PurposeConfirm, a)
		text.WriteString("\n- " + a.Frequency + " mails for " + what + ":\n  " + link + "\n")
		html.WriteString("<li>" + esc(a.Frequency) + " mails for " + esc(what) + ": <a href=\"" + esc(link) + "\">Confirm</a></li>")
	}
	const tail = "If it was not you, ignore this mail: unconfirmed searches are deleted after 48 hours."
	text.WriteString("\n" + tail + "\n")
	html.WriteString("</ul><p>" + tail + "</p>")
	return r.WithErasure(mailer.Message{To: pending[0].Email, Subject: "Confirm your job alert", Text: text.String(), HTML: html.String()})
}

// MatchMail tells of one new job.
func (r *Relay) MatchMail(a alertbus.Alert, j jobbus.Job) mailer.Message {
	// ?ref=alert: the page's view and its Apply click count under the
	// alert channel (statsbus).
	jobURL := r.Jobs.JobURL(jobbus.PageURL(j.Slug, j.ID)) + "?ref=alert"
	manage := r.Link("manage", alertbus.PurposeManage, a)
	unsub := r.Link("unsubscribe", alertbus.PurposeManage, a)
	lines := []string{j.Title, j.Company + ", " + j.CityName}
	if s := salary(j); s != "" {
		lines = append(lines, s)
	}
	text := "A new job matches your alert (" + Describe(a.Search) + "):\n\n" + strings.Join(lines, "\n") + "\n" + jobURL +
		"\n\nManage the alert: " + manage + "\nUnsubscribe: " + unsub + "\n"
	html := "<p>A new job matches your alert (" + esc(Describe(a.Search)) + "):</p><p><a href=\"" + esc(jobURL) + "\">" +
		esc(j.Title) + "</a><br>" + esc(strings.Join(lines[1:], " · ")) + "</p><p><a href=\"" + esc(manage) +
		"\">Manage the alert</a> · <a href=\"" + esc(unsub) + "\">Unsubscribe</a></p>"
	return r.WithErasure(mailer.Message{To: a.Email, Subject: "New job: " + j.Title + " at " + j.Company, Text: text, HTML: html,
		ListUnsubscribe: unsub})
}

// salary is a job's salary for the mail; a period other than the year
// the spec's salaries have is named ("15–18 EUR per hour").
func salary(j jobbus.Job) string {
	per := ""
	if j.SalaryPeriod != "" && j.SalaryPeriod != jobbus.DefaultSalaryPeriod {
		per = " per " + j.SalaryPeriod
	}
	switch {
	case j.SalMin != nil && j.SalMax != nil:
		return strconv.FormatInt(*j.SalMin, 10) + "–" + strconv.FormatInt(*j.SalMax, 10) + " " + j.Currency + per
	case j.SalMin != nil:
		return "from " + strconv.FormatInt(*j.SalMin, 10) + " " + j.Currency + per
	case j.SalMax != nil:
		return "up to " + strconv.FormatInt(*j.SalMax, 10) + " " + j.Currency + per
	}
	return ""
}

var esc = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace
